//! The device context: GET_CONTEXT, the static UAR pages, device and port queries, GIDs
//! and async events.

use crate::channel::{Channel, KernelFile, UarMapping, page_size};
use crate::command::{self, read};
use crate::comp_channel::{read_event, set_nonblocking};
use crate::discovery::{self, DeviceInfo, DeviceKind, sysfs_gid};
use crate::dma::{DbPool, DbRecord};
use crate::error::{Error, Result};
use crate::user_index::{MAX_USER_INDEX, UserIndex, UserIndexPool};
use ferrodat_abi::mlx5::{
    self, AllocUcontextReqV2, AllocUcontextResp, BF_OFFSET, BFREGS_PER_UAR, lib_cap,
};
use ferrodat_abi::uverbs::{
    self, AsyncEventDesc, ExQueryDeviceResp, QueryDeviceResp, QueryPortResp, cmd, ex_cmd,
};
use ferrodat_softhca::fabric::FabricDir;
use ferrodat_softhca::{Device as SoftDevice, Uverbs};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use zerocopy::{FromZeros, IntoBytes};

/// bfregs asked for at GET_CONTEXT (rdma-core's default `MLX5_TOTAL_UUARS`).
pub const TOTAL_BFREGS: u32 = 16;
/// Low-latency (dedicated) bfregs asked for (rdma-core's default `MLX5_NUM_LOW_LAT_UUARS`).
pub const LOW_LATENCY_BFREGS: u32 = 4;

/// An open device with its user context. Cheap to clone (an `Arc`); every object created
/// from it holds a clone, so the context (its fd, its UAR mappings) outlives them all.
#[derive(Clone, Debug)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

#[derive(Debug)]
pub(crate) struct ContextInner {
    /// Dropped before the channel: unmapping needs no command.
    uars: Vec<UarMapping>,
    pub(crate) dbrecs: DbPool,
    async_fd: OwnedFd,
    num_comp_vectors: u32,
    ucontext: AllocUcontextResp,
    name: String,
    kind: DeviceKind,
    soft: Option<Arc<SoftDevice>>,
    user_indexes: Arc<UserIndexPool>,
    next_user_handle: AtomicU32,
    /// The process that opened it: a child forked since holds a copy whose objects are the
    /// parent's ([`Context::is_inherited`]).
    opened_by: u32,
    /// Dropped last: closing the file destroys whatever is left.
    pub(crate) channel: Channel,
}

/// A BlueFlame register (one of the UAR's bfregs) as the data path uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BfReg {
    /// The register: UAR page + `0x800 + k * bf_reg_size`.
    pub reg: NonNull<u8>,
    /// Index of the mapped UAR page (for [`Channel::doorbell_rung`]).
    pub uar_page: u32,
    /// Byte offset of `reg` in that page.
    pub offset_in_page: u32,
    /// Size of one BlueFlame half (`bf_reg_size / 2`) for a dedicated (low-latency) bfreg;
    /// 0 for a doorbell-only one: bfreg 0, and the medium bfregs the kernel hands to
    /// several QPs. Those take only 8-byte doorbell stores, each one write the device
    /// sees whole, so QPs posting on different threads never interleave two BlueFlame
    /// copies in one register (rdma-core copies into them under a per-register lock
    /// instead). Successive rings alternate `reg` and `reg + buf_size`.
    pub buf_size: u32,
    /// The bfreg index in the 4-per-UAR numbering CREATE_QP answered.
    pub index: u32,
}

// SAFETY: a BfReg is an address in a UAR mapping the context owns; it grants no access by
// itself. A dedicated register is rung by one QP, whose send queue serialises its stores;
// a shared one only takes single 8-byte stores.
unsafe impl Send for BfReg {}
// SAFETY: as above.
unsafe impl Sync for BfReg {}

/// The GET_CONTEXT values a data path and a user care about (the raw response is in
/// [`Context::ucontext`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextAttr {
    /// Number of completion vectors.
    pub num_comp_vectors: u32,
    /// bfreg size in bytes (two BlueFlame halves).
    pub bf_reg_size: u32,
    /// Total bfregs (4-per-UAR numbering covers `tot_bfregs * 2` indices).
    pub tot_bfregs: u32,
    /// Cache line size: the doorbell-record slot.
    pub cache_line_size: u32,
    /// CQE version (1: CQEs carry the QP's user index).
    pub cqe_version: u8,
    /// Largest send WQE in bytes.
    pub max_sq_desc_sz: u16,
    /// Largest receive WQE in bytes.
    pub max_rq_desc_sz: u16,
    /// Largest SQ in WQEBBs.
    pub max_send_wqebb: u32,
    /// Largest RQ in WQEs.
    pub max_recv_wr: u32,
    /// Largest SRQ in WQEs.
    pub max_srq_recv_wr: u32,
    /// UARs per system page (0 from old kernels means 1).
    pub num_uars_per_page: u32,
}

/// Device attributes (QUERY_DEVICE_EX, or QUERY_DEVICE where that is missing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version (major << 32 | minor << 16 | sub-minor).
    pub fw_ver: u64,
    /// Node GUID.
    pub node_guid: u64,
    /// System image GUID.
    pub sys_image_guid: u64,
    /// Largest MR in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (bit n: 2^n bytes).
    pub page_size_cap: u64,
    /// IEEE OUI of the vendor (0x02c9 for Mellanox/NVIDIA; the PCI vendor is 0x15b3).
    pub vendor_id: u32,
    /// Vendor part id (PCI device id: 4119 = 0x1017 for ConnectX-5).
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Max QPs.
    pub max_qp: u32,
    /// Max WRs per queue.
    pub max_qp_wr: u32,
    /// Device capability flags (all 64 bits with the extended query).
    pub device_cap_flags: u64,
    /// Max SGEs per WR.
    pub max_sge: u32,
    /// Max SGEs per RDMA READ.
    pub max_sge_rd: u32,
    /// Max CQs.
    pub max_cq: u32,
    /// Max CQEs per CQ.
    pub max_cqe: u32,
    /// Max MRs.
    pub max_mr: u32,
    /// Max memory windows (0: the device has none).
    pub max_mw: u32,
    /// Max PDs.
    pub max_pd: u32,
    /// Max outstanding RDMA READ/atomics as target, per QP.
    pub max_qp_rd_atom: u32,
    /// Max outstanding RDMA READ/atomics as initiator, per QP.
    pub max_qp_init_rd_atom: u32,
    /// Atomic support (0 none, 1 HCA, 2 global).
    pub atomic_cap: u32,
    /// Max SRQs.
    pub max_srq: u32,
    /// Max WRs per SRQ.
    pub max_srq_wr: u32,
    /// Max SGEs per SRQ WR.
    pub max_srq_sge: u32,
    /// P_Key table size.
    pub max_pkeys: u16,
    /// Local CA ACK delay.
    pub local_ca_ack_delay: u8,
    /// Number of ports.
    pub phys_port_cnt: u8,
    /// HCA core clock in kHz (extended query only).
    pub hca_core_clock_khz: Option<u64>,
    /// The raw response; with the legacy query only `base` is filled in.
    pub raw: ExQueryDeviceResp,
    /// True if it came from QUERY_DEVICE_EX.
    pub extended: bool,
}

/// Port states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// No state change.
    Nop,
    /// Down.
    Down,
    /// Initialising.
    Init,
    /// Armed.
    Armed,
    /// Active: traffic flows.
    Active,
    /// Active, deferred.
    ActiveDefer,
    /// A value this driver does not know.
    Other(u8),
}

impl From<u8> for PortState {
    fn from(v: u8) -> Self {
        match v {
            0 => PortState::Nop,
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            5 => PortState::ActiveDefer,
            x => PortState::Other(x),
        }
    }
}

/// Port attributes (QUERY_PORT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Largest MTU ([`uverbs::mtu`] encoding: 1 = 256 … 5 = 4096).
    pub max_mtu: u8,
    /// Active MTU (same encoding).
    pub active_mtu: u8,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// Capability flags.
    pub port_cap_flags: u32,
    /// Largest message in bytes.
    pub max_msg_sz: u32,
    /// P_Key table length.
    pub pkey_tbl_len: u16,
    /// LID (0 on Ethernet).
    pub lid: u16,
    /// Link layer (1 InfiniBand, 2 Ethernet).
    pub link_layer: u8,
    /// Physical state (5 = LinkUp).
    pub phys_state: u8,
    /// True if every path needs a GRH (RoCE).
    pub grh_required: bool,
    /// The raw response.
    pub raw: QueryPortResp,
}

impl PortAttr {
    /// The active MTU in bytes (0 if unknown).
    pub fn active_mtu_bytes(&self) -> u32 {
        mtu_bytes(self.active_mtu)
    }
}

/// Bytes of an MTU enum value (0 if unknown).
pub fn mtu_bytes(mtu: u8) -> u32 {
    if (1..=5).contains(&mtu) { 128 << mtu } else { 0 }
}

/// One async event (16-byte record of the async fd).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncEvent {
    /// The object's user handle (CQ, QP, SRQ) or the port number.
    pub element: u64,
    /// The event type ([`uverbs::event`]).
    pub event_type: u32,
}

impl Context {
    /// Opens the device called `name` (`mlx5_0`, `softhca0`, …). An unknown name, or no
    /// device at all, gives an error listing what exists and how to get a device.
    pub fn open(name: &str) -> Result<Context> {
        let d = discovery::discover();
        let info = d.find(name)?.clone();
        Context::open_device(&info)
    }

    /// Opens a discovered device.
    pub fn open_device(info: &DeviceInfo) -> Result<Context> {
        match &info.kind {
            DeviceKind::Hardware(h) => {
                if !crate::mmio::ORDERS_DEVICE_MEMORY {
                    return Err(Error::invalid(
                        "open",
                        format!(
                            "{}: real devices are driven on x86_64 and aarch64 only (the \
                             device-memory barriers of other targets are not written)",
                            info.name
                        ),
                    )
                    .with_hint("use softhca here, or build for x86_64 or aarch64"));
                }
                let file = KernelFile::open(&h.uverbs_path, h.dev)?;
                Context::init(Channel::Kernel(file), info.name.clone(), info.kind.clone(), None)
            }
            DeviceKind::Softhca(s) => {
                let dev = if s.fabric == FabricDir::from_env() {
                    SoftDevice::open(&s.config.name)
                } else {
                    SoftDevice::new_in(s.config.clone(), s.fabric.clone())
                }
                .map_err(|e| {
                    Error::invalid("open", e.to_string()).with_detail(info.name.clone())
                })?;
                Context::softhca(dev, info.kind.clone())
            }
        }
    }

    /// Opens an in-process softhca device (embedding, tests with a private fabric).
    pub fn open_softhca(dev: Arc<SoftDevice>) -> Result<Context> {
        let kind = DeviceKind::Softhca(discovery::SofthcaDevice {
            config: dev.config().clone(),
            fabric: FabricDir::from_env(), // (the device does not say which fabric it joined)
        });
        Context::softhca(dev, kind)
    }

    fn softhca(dev: Arc<SoftDevice>, kind: DeviceKind) -> Result<Context> {
        let uv = Uverbs::open(dev.clone()).map_err(|e| {
            let e = Error::errno("open", e.0);
            if dev.engine().owner().is_current() {
                return e;
            }
            e.with_detail(format!("softhca device {}", dev.name())).with_hint(format!(
                "the device was opened by process {}, and this process is a child forked \
                 from it: open a device of its own (softhca's Device::open or Device::new)",
                dev.engine().owner().pid()
            ))
        })?;
        Context::init(Channel::Softhca(uv), dev.name().to_string(), kind, Some(dev))
    }

    fn init(
        channel: Channel,
        name: String,
        kind: DeviceKind,
        soft: Option<Arc<SoftDevice>>,
    ) -> Result<Context> {
        let req = AllocUcontextReqV2 {
            total_num_bfregs: TOTAL_BFREGS,
            num_low_latency_bfregs: LOW_LATENCY_BFREGS,
            flags: 0,
            comp_mask: 0,
            max_cqe_version: 1,
            // 4 KiB UARs: the kernel reports num_uars_per_page from the device's capability
            // whether or not the library asks, and only with this bit does the static UAR
            // layout it hands out match that figure (on hosts with pages over 4 KiB, where
            // mlx5 enables the capability). No DYN_UAR: there is no ioctl path for
            // dynamic UARs here.
            lib_caps: lib_cap::UAR_4K,
            ..Default::default()
        };
        let out = size_of::<uverbs::GetContextResp>() + size_of::<AllocUcontextResp>();
        let r = command::run(
            &channel,
            "GET_CONTEXT",
            cmd::GET_CONTEXT,
            uverbs::GetContext::default().as_bytes(),
            req.as_bytes(),
            out,
        )?;
        let core: uverbs::GetContextResp = read("GET_CONTEXT", &r, 0)?;
        if (core.async_fd as i32) < 0 {
            return Err(Error::invalid("GET_CONTEXT", "no async event fd in the response"));
        }
        // SAFETY: GET_CONTEXT created this fd for us; nothing else owns it.
        let async_fd = unsafe { OwnedFd::from_raw_fd(core.async_fd as RawFd) };
        set_nonblocking("GET_CONTEXT", async_fd.as_raw_fd())?;
        let m: AllocUcontextResp = read("GET_CONTEXT", &r, size_of::<uverbs::GetContextResp>())?;
        check_ucontext(&m)?;
        let nupp = m.num_uars_per_page.max(1);
        let pages = m.tot_bfregs / (nupp * 2);
        if pages == 0 {
            return Err(Error::invalid("GET_CONTEXT", "tot_bfregs covers no whole UAR page"));
        }
        let mut uars = Vec::with_capacity(pages as usize);
        for i in 0..pages {
            let pgoff = (mlx5::mmap_cmd::REGULAR_PAGE << mlx5::MMAP_CMD_SHIFT) | u64::from(i);
            uars.push(channel.mmap_uar(pgoff)?);
        }
        let inner = ContextInner {
            uars,
            dbrecs: DbPool::new(m.cache_line_size as usize),
            async_fd,
            num_comp_vectors: core.num_comp_vectors,
            ucontext: m,
            name,
            kind,
            soft,
            user_indexes: UserIndexPool::new(MAX_USER_INDEX),
            next_user_handle: AtomicU32::new(1),
            opened_by: std::process::id(),
            channel,
        };
        Ok(Context { inner: Arc::new(inner) })
    }

    /// The device name it was opened by.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What device this is.
    pub fn kind(&self) -> &DeviceKind {
        &self.inner.kind
    }

    /// The uverbs channel (the data path calls its model entry points).
    #[inline]
    pub fn channel(&self) -> &Channel {
        &self.inner.channel
    }

    /// The raw mlx5 GET_CONTEXT response.
    pub fn ucontext(&self) -> &AllocUcontextResp {
        &self.inner.ucontext
    }

    /// The GET_CONTEXT values.
    pub fn attr(&self) -> ContextAttr {
        let m = &self.inner.ucontext;
        ContextAttr {
            num_comp_vectors: self.inner.num_comp_vectors,
            bf_reg_size: m.bf_reg_size,
            tot_bfregs: m.tot_bfregs,
            cache_line_size: m.cache_line_size,
            cqe_version: m.cqe_version,
            max_sq_desc_sz: m.max_sq_desc_sz,
            max_rq_desc_sz: m.max_rq_desc_sz,
            max_send_wqebb: m.max_send_wqebb,
            max_recv_wr: m.max_recv_wr,
            max_srq_recv_wr: m.max_srq_recv_wr,
            num_uars_per_page: m.num_uars_per_page.max(1),
        }
    }

    /// Number of mapped UAR pages.
    pub fn uar_pages(&self) -> usize {
        self.inner.uars.len()
    }

    /// UAR page `i`: its address and its index (for [`Channel::doorbell_rung`]).
    pub fn uar_page(&self, i: usize) -> Option<(NonNull<u8>, u32)> {
        self.inner.uars.get(i).map(|u| (u.as_ptr(), i as u32))
    }

    /// The bfreg CREATE_QP named (4-per-UAR numbering): where to ring, and how.
    pub fn bfreg(&self, index: u32) -> Result<BfReg> {
        let m = &self.inner.ucontext;
        let nupp = m.num_uars_per_page.max(1);
        let uar = index / BFREGS_PER_UAR;
        let k = index % BFREGS_PER_UAR;
        let sys_page = uar / nupp;
        let bad = || {
            Error::invalid(
                "CREATE_QP",
                format!(
                    "the kernel named bfreg {index}, which is not a user bfreg of the mapped UARs"
                ),
            )
        };
        if k >= 2 || sys_page as usize >= self.inner.uars.len() {
            return Err(bad());
        }
        let offset =
            (uar % nupp) * mlx5::ADAPTER_PAGE_SIZE as u32 + BF_OFFSET as u32 + k * m.bf_reg_size;
        if offset as usize + m.bf_reg_size.max(8) as usize > page_size() {
            return Err(bad());
        }
        let page = self.inner.uars[sys_page as usize].as_ptr();
        // SAFETY: offset + bf_reg_size <= page_size (checked): inside the mapping.
        let reg = unsafe { page.add(offset as usize) };
        Ok(BfReg {
            reg,
            uar_page: sys_page,
            offset_in_page: offset,
            buf_size: if self.bfreg_is_dedicated(index) { m.bf_reg_size / 2 } else { 0 },
            index,
        })
    }

    /// Whether bfreg `index` (4-per-UAR numbering) is one of the low-latency bfregs, which
    /// the kernel gives to one QP each: the last [`LOW_LATENCY_BFREGS`] of its 2-per-UAR
    /// numbering (mlx5_ib's high class). The others below them are shared by several QPs;
    /// bfreg 0 by every QP that gets no other.
    fn bfreg_is_dedicated(&self, index: u32) -> bool {
        let kernel_index = index / BFREGS_PER_UAR * 2 + index % BFREGS_PER_UAR;
        index != 0
            && kernel_index >= self.inner.ucontext.tot_bfregs.saturating_sub(LOW_LATENCY_BFREGS)
    }

    /// A fresh doorbell record (zeroed, in its own cache-line slot) for the creation `op`,
    /// the first thing a creation does: refused in a forked child, where the record pages
    /// are the parent's and not mapped.
    pub fn alloc_dbrec(&self, op: &'static str) -> Result<DbRecord> {
        self.refuse_if_inherited(op)?;
        self.inner.dbrecs.alloc()
    }

    /// A user index for a QP or SRQ (CQE version 1, which `open` requires, reports it in
    /// CQEs), held until the returned guard drops. `op` names the creation for the error
    /// when all are held.
    pub(crate) fn alloc_uidx(&self, op: &'static str) -> Result<UserIndex> {
        self.inner.user_indexes.take(op)
    }

    /// A user handle for a CQ created without one.
    pub(crate) fn alloc_user_handle(&self) -> u64 {
        u64::from(self.inner.next_user_handle.fetch_add(1, Ordering::Relaxed))
    }

    /// True in a child forked since the context was opened. Its copy of the context, and
    /// of every object made on it, belongs to the parent: on hardware a command through the
    /// inherited uverbs file acts on the parent's objects, and their queues are not mapped
    /// in the child (`MADV_DONTFORK`). The driver therefore refuses commands there, and
    /// drops send none.
    pub fn is_inherited(&self) -> bool {
        std::process::id() != self.inner.opened_by
    }

    /// Runs a legacy command on this context's channel (refused in a forked child).
    pub(crate) fn run(
        &self,
        name: &'static str,
        command: u32,
        core: &[u8],
        udata: &[u8],
        resp_len: usize,
    ) -> Result<Vec<u8>> {
        self.refuse_if_inherited(name)?;
        command::run(&self.inner.channel, name, command, core, udata, resp_len)
    }

    /// The destroy command `name` of an object being dropped. A failure goes to stderr, as
    /// a drop cannot return it; in a forked child nothing is sent (the object is the
    /// parent's). `what` names the object for that message.
    pub(crate) fn run_on_drop(
        &self,
        name: &'static str,
        command: u32,
        core: &[u8],
        resp_len: usize,
        what: std::fmt::Arguments<'_>,
    ) {
        if self.is_inherited() {
            return;
        }
        if let Err(e) = self.run(name, command, core, &[], resp_len) {
            eprintln!("ferrodat-driver: dropping {what}: {e}");
        }
    }

    fn refuse_if_inherited(&self, name: &'static str) -> Result<()> {
        if !self.is_inherited() {
            return Ok(());
        }
        Err(Error::invalid(
            name,
            format!(
                "the device context was opened by process {}, and this process is a child \
                 forked from it: the context's objects are the parent's",
                self.inner.opened_by
            ),
        )
        .with_hint("open the device again in the child and make its own objects there"))
    }

    /// Device attributes: QUERY_DEVICE_EX, falling back to QUERY_DEVICE on ENOSYS or
    /// EOPNOTSUPP (older kernels).
    pub fn query_device(&self) -> Result<DeviceAttr> {
        self.refuse_if_inherited("QUERY_DEVICE_EX")?;
        let ex = command::run_ex(
            &self.inner.channel,
            "QUERY_DEVICE_EX",
            ex_cmd::QUERY_DEVICE,
            uverbs::ExQueryDevice::default().as_bytes(),
            &[],
            size_of::<ExQueryDeviceResp>(),
            0,
        );
        let (raw, extended) = match ex {
            Ok(r) => (read::<ExQueryDeviceResp>("QUERY_DEVICE_EX", &r, 0)?, true),
            Err(e) if matches!(e.errno_value(), Some(libc::ENOSYS | libc::EOPNOTSUPP)) => {
                let r = self.run(
                    "QUERY_DEVICE",
                    cmd::QUERY_DEVICE,
                    uverbs::QueryDevice::default().as_bytes(),
                    &[],
                    size_of::<QueryDeviceResp>(),
                )?;
                let mut raw = ExQueryDeviceResp::new_zeroed();
                raw.base = read("QUERY_DEVICE", &r, 0)?;
                (raw, false)
            }
            Err(e) => return Err(e),
        };
        let b = &raw.base;
        Ok(DeviceAttr {
            fw_ver: b.fw_ver,
            node_guid: b.node_guid.get(),
            sys_image_guid: b.sys_image_guid.get(),
            max_mr_size: b.max_mr_size,
            page_size_cap: b.page_size_cap,
            vendor_id: b.vendor_id,
            vendor_part_id: b.vendor_part_id,
            hw_ver: b.hw_ver,
            max_qp: b.max_qp,
            max_qp_wr: b.max_qp_wr,
            device_cap_flags: if extended {
                raw.device_cap_flags_ex | u64::from(b.device_cap_flags)
            } else {
                u64::from(b.device_cap_flags)
            },
            max_sge: b.max_sge,
            max_sge_rd: b.max_sge_rd,
            max_cq: b.max_cq,
            max_cqe: b.max_cqe,
            max_mr: b.max_mr,
            max_mw: b.max_mw,
            max_pd: b.max_pd,
            max_qp_rd_atom: b.max_qp_rd_atom,
            max_qp_init_rd_atom: b.max_qp_init_rd_atom,
            atomic_cap: b.atomic_cap,
            max_srq: b.max_srq,
            max_srq_wr: b.max_srq_wr,
            max_srq_sge: b.max_srq_sge,
            max_pkeys: b.max_pkeys,
            local_ca_ack_delay: b.local_ca_ack_delay,
            phys_port_cnt: b.phys_port_cnt,
            hca_core_clock_khz: extended.then_some(raw.hca_core_clock),
            raw,
            extended,
        })
    }

    /// Port attributes (QUERY_PORT); ports count from 1.
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        let req = uverbs::QueryPort { port_num: port, ..Default::default() };
        let r = self
            .run("QUERY_PORT", cmd::QUERY_PORT, req.as_bytes(), &[], size_of::<QueryPortResp>())
            .map_err(|e| e.with_detail(format!("port {port}")))?;
        let raw: QueryPortResp = read("QUERY_PORT", &r, 0)?;
        Ok(PortAttr {
            state: PortState::from(raw.state),
            max_mtu: raw.max_mtu,
            active_mtu: raw.active_mtu,
            gid_tbl_len: raw.gid_tbl_len,
            port_cap_flags: raw.port_cap_flags,
            max_msg_sz: raw.max_msg_sz,
            pkey_tbl_len: raw.pkey_tbl_len,
            lid: raw.lid,
            link_layer: raw.link_layer,
            phys_state: raw.phys_state,
            grh_required: raw.flags & uverbs::port_flags::GRH_REQUIRED != 0,
            raw,
        })
    }

    /// GID `index` of `port`: from sysfs for hardware, from the device for softhca (whose
    /// table holds one RoCE v2 GID, index 0, derived from its IP address).
    pub fn gid(&self, port: u8, index: u32) -> Result<[u8; 16]> {
        match (&self.inner.kind, &self.inner.soft) {
            (_, Some(dev)) => {
                if port != 1 || index != 0 {
                    return Err(Error::invalid(
                        "query GID",
                        format!(
                            "softhca has port 1 with GID index 0 only (asked port {port} index {index})"
                        ),
                    ));
                }
                Ok(dev.gid())
            }
            (DeviceKind::Hardware(h), None) => sysfs_gid(h, port, index),
            (DeviceKind::Softhca(_), None) => Err(Error::invalid("query GID", "no softhca device")),
        }
    }

    /// The source GID of connections from `port`, with its table index: entry 0 on an
    /// InfiniBand port and on softhca; on a RoCE port the entry
    /// [`choose_roce_gid`](discovery::choose_roce_gid) picks (a RoCE v2 GID, IP-routable
    /// if one is; mlx5's entry 0 is RoCE v1 where the device supports v1). Read anew each
    /// time: addresses come and go with the interface's.
    pub fn source_gid(&self, port: u8) -> Result<(u8, [u8; 16])> {
        let (DeviceKind::Hardware(h), None) = (&self.inner.kind, &self.inner.soft) else {
            return Ok((0, self.gid(port, 0)?));
        };
        let attr = self.query_port(port)?;
        if attr.link_layer != uverbs::link_layer::ETHERNET {
            return Ok((0, sysfs_gid(h, port, 0)?));
        }
        let mut entries = Vec::new();
        for index in 0..attr.gid_tbl_len.min(256) {
            let Ok(gid) = sysfs_gid(h, port, index) else { continue };
            let kind = discovery::sysfs_gid_type(h, port, index);
            let done = kind.as_deref() == Some("RoCE v2") && gid[..12] == IPV4_MAPPED_PREFIX;
            entries.push((index, gid, kind));
            if done {
                break;
            }
        }
        let index = discovery::choose_roce_gid(&entries);
        let gid = match entries.iter().find(|e| e.0 == index) {
            Some(&(_, gid, _)) => gid,
            None => sysfs_gid(h, port, index)?, // no entry read: index 0, for its error
        };
        Ok((index as u8, gid))
    }

    /// The async event fd (pollable and non-blocking; 16-byte records).
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.inner.async_fd.as_fd()
    }

    /// Waits up to `timeout` (`None`: forever) for an async event. `Ok(None)` on timeout.
    pub fn read_async_event(&self, timeout: Option<Duration>) -> Result<Option<AsyncEvent>> {
        let fd = self.inner.async_fd.as_raw_fd();
        let Some(d) = read_event::<AsyncEventDesc>("read async event", fd, timeout)? else {
            return Ok(None);
        };
        Ok(Some(AsyncEvent { element: d.element, event_type: d.event_type }))
    }
}

/// The first 12 bytes of an IPv4-mapped GID (`::ffff:a.b.c.d`).
const IPV4_MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// The mlx5 GET_CONTEXT response's values this driver depends on, checked before use.
fn check_ucontext(m: &AllocUcontextResp) -> Result<()> {
    let bad = |why: &str| Error::invalid("GET_CONTEXT", why.to_string());
    if m.cache_line_size == 0 || !m.cache_line_size.is_power_of_two() {
        return Err(bad("cache_line_size is not a power of two"));
    }
    if m.tot_bfregs == 0 {
        return Err(bad("tot_bfregs is 0: the kernel wants dynamic UARs (ioctl), not supported")
            .with_hint("use a kernel whose mlx5_ib still hands out static UARs"));
    }
    // Completions are matched to QPs by the user index of CQE version 1; version 0
    // CQEs carry the QPN there instead (older mlx5 devices, such as Connect-IB), which
    // the poller does not look up.
    if m.cqe_version != 1 {
        return Err(bad(&format!(
            "CQE version {}: this driver needs version 1 (user indexes)",
            m.cqe_version
        ))
        .with_hint("use a ConnectX-4 or later device"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usable() -> AllocUcontextResp {
        AllocUcontextResp {
            cache_line_size: 64,
            tot_bfregs: 16,
            cqe_version: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_context_the_driver_cannot_drive_is_refused_with_the_reason() {
        assert!(check_ucontext(&usable()).is_ok());
        let cases = [
            (AllocUcontextResp { cqe_version: 0, ..usable() }, "CQE version 0"),
            (AllocUcontextResp { cqe_version: 2, ..usable() }, "CQE version 2"),
            (AllocUcontextResp { tot_bfregs: 0, ..usable() }, "dynamic UARs"),
            (AllocUcontextResp { cache_line_size: 48, ..usable() }, "cache_line_size"),
        ];
        for (m, says) in cases {
            let e = check_ucontext(&m).unwrap_err().to_string();
            assert!(e.contains("GET_CONTEXT") && e.contains(says), "{e}");
        }
        let e = check_ucontext(&AllocUcontextResp { cqe_version: 0, ..usable() }).unwrap_err();
        assert!(e.to_string().contains("ConnectX-4"), "{e}");
    }
}
