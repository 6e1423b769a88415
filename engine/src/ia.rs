//! The interface adapter (IA): a driver context on one device and port, with the IP
//! address DAT consumers know it by, and the attributes `dat_ia_query` reports.
//!
//! An IA is named by a dat.conf line whose instance data says which device, port and
//! address to use (`"softhca0 1 127.0.0.1"`, see [`IaSpec::parse`]); every figure in
//! [`IaAttr`] comes from the device's QUERY_DEVICE/QUERY_PORT answers, and
//! [`ProviderAttr`] says what this provider implements — nothing is claimed that the
//! engine does not do.

use crate::cm::Cm;
use crate::error::{DatError, DatResult};
use crate::evd::Evd;
use crate::event::{Event, ObjectId};
use ferrodat_abi::dat::{
    self as abi, IB_EXTENSION_VERSION, completion_flags, ep_creator, extension, iov_ownership,
    mem_type, pz_support, qos, rmr_scope, subtype,
};
use ferrodat_abi::uverbs::device_cap;
use ferrodat_driver::Context;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, OnceLock, Weak};

mod close;
mod device_events;
pub use close::CloseMode;
pub(crate) use close::{ChildKind, IaChild};
pub(crate) use device_events::DeviceErrorTarget;

/// Which device, port and address an IA uses: the instance data of its dat.conf line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IaSpec {
    /// Driver device name (`softhca0`, `mlx5_0`, ...).
    pub device: String,
    /// Port number (1 for every mlx5 device softhca models).
    pub port: u8,
    /// The IA's address; `None`: the one the port's GID 0 is derived from.
    pub address: Option<IpAddr>,
}

impl IaSpec {
    /// Parses `"<device> [<port> [<ip address>]]"` (dat.conf instance data, quotes removed;
    /// extra words are refused).
    pub fn parse(instance_data: &str) -> DatResult<IaSpec> {
        let bad = |why: String| {
            DatError::invalid_parameter(1).with_detail(format!(
                "IA instance data {instance_data:?}: {why}; expected \"<device> [<port> \
                 [<ip address>]]\", e.g. \"softhca0 1 127.0.0.1\" (`ferrodat conf` prints lines \
                 for the devices found)"
            ))
        };
        let words: Vec<&str> = instance_data.split_whitespace().collect();
        let (device, port, address) = match words.as_slice() {
            [] => return Err(bad("no device named".into())),
            [d] => (*d, None, None),
            [d, p] => (*d, Some(*p), None),
            [d, p, a] => (*d, Some(*p), Some(*a)),
            _ => return Err(bad(format!("{} words", words.len()))),
        };
        let port = match port {
            None => 1,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(bad(format!("port {p:?} is not a number from 1 to 255"))),
            },
        };
        let address = match address {
            None => None,
            Some(a) => {
                Some(a.parse::<IpAddr>().map_err(|_| bad(format!("{a:?} is not an IP address")))?)
            }
        };
        Ok(IaSpec { device: device.to_string(), port, address })
    }
}

/// `DAT_IA_ATTR`, as this IA fills it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IaAttr {
    /// The device's name (`softhca0`, `mlx5_0`).
    pub adapter_name: String,
    /// Who made the device.
    pub vendor_name: String,
    /// Hardware version (major, minor).
    pub hardware_version: (u32, u32),
    /// Firmware version (major, minor).
    pub firmware_version: (u32, u32),
    /// The IA's address (`ia_address_ptr`), port 0.
    pub address: IpAddr,
    /// Endpoints (QPs) the device can hold.
    pub max_eps: u32,
    /// Outstanding DTOs per endpoint and direction.
    pub max_dto_per_ep: u32,
    /// Incoming RDMA READs per endpoint (responder resources).
    pub max_rdma_read_per_ep_in: u32,
    /// Outgoing RDMA READs per endpoint (initiator depth).
    pub max_rdma_read_per_ep_out: u32,
    /// EVDs (each DTO EVD owns a CQ).
    pub max_evds: u32,
    /// Entries of one EVD.
    pub max_evd_qlen: u32,
    /// Segments of one DTO's local IOV.
    pub max_iov_segments_per_dto: u32,
    /// LMRs.
    pub max_lmrs: u32,
    /// Bytes of one LMR.
    pub max_lmr_block_size: u64,
    /// Highest virtual address an LMR may start at.
    pub max_lmr_virtual_address: u64,
    /// PZs.
    pub max_pzs: u32,
    /// Bytes of one message.
    pub max_message_size: u32,
    /// Bytes of one RDMA operation.
    pub max_rdma_size: u32,
    /// RMRs (memory windows).
    pub max_rmrs: u32,
    /// Highest target address of an RMR.
    pub max_rmr_target_address: u64,
    /// SRQs.
    pub max_srqs: u32,
    /// Endpoints one SRQ can feed.
    pub max_ep_per_srq: u32,
    /// Receives one SRQ can hold.
    pub max_recv_per_srq: u32,
    /// Segments of an RDMA READ's local IOV.
    pub max_iov_segments_per_rdma_read: u32,
    /// Segments of an RDMA WRITE's local IOV.
    pub max_iov_segments_per_rdma_write: u32,
    /// Incoming RDMA READs over the whole IA.
    pub max_rdma_read_in: u32,
    /// Outgoing RDMA READs over the whole IA.
    pub max_rdma_read_out: u32,
    /// The per-EP RDMA READ limits are guaranteed, not just a ceiling.
    pub max_rdma_read_per_ep_in_guaranteed: bool,
    /// As above, outgoing.
    pub max_rdma_read_per_ep_out_guaranteed: bool,
    /// Zero-based virtual addresses supported.
    pub zb_supported: bool,
    /// `DAT_EXTENSION_IB`: RDMA WRITE with immediate, compare-and-swap, fetch-and-add.
    pub extension_supported: u32,
    /// `DAT_IB_EXTENSION_VERSION`.
    pub extension_version: u32,
    /// Transport attributes (name, value).
    pub transport_attr: Vec<(String, String)>,
    /// Vendor attributes (name, value).
    pub vendor_attr: Vec<(String, String)>,
}

/// `DAT_PROVIDER_ATTR`, as this provider fills it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderAttr {
    /// The provider's name.
    pub provider_name: String,
    /// Provider version (major, minor).
    pub provider_version: (u32, u32),
    /// The DAT API version: 2.0, which libdat2's registry key requires.
    pub dapl_version: (u32, u32),
    /// `DAT_MEM_TYPE_*` bits of the LMR kinds `dat_lmr_create` takes.
    pub lmr_mem_types_supported: u32,
    /// `DAT_IOV_*`: what the provider does with the consumer's IOVs.
    pub iov_ownership_on_return: u32,
    /// `DAT_QOS_*` bits accepted.
    pub dat_qos_supported: u32,
    /// `DAT_COMPLETION_*` flags honoured.
    pub completion_flags_supported: u32,
    /// FALSE, as the registry key of the stock test programs requires; the implementation
    /// is safe for multithreaded consumers all the same.
    pub is_thread_safe: bool,
    /// Bytes of private data in connection messages.
    pub max_private_data_size: u32,
    /// Multipath connections.
    pub supports_multipath: bool,
    /// `DAT_PSP_CREATES_EP_*`.
    pub ep_creator: u32,
    /// `DAT_PZ_*`.
    pub pz_support: u32,
    /// Buffer alignment that performs best (bytes).
    pub optimal_buffer_alignment: u32,
    /// Which EVD streams may share an EVD, indexed in the order SOFTWARE, CR, DTO,
    /// CONNECTION, RMR_BIND, ASYNC.
    pub evd_stream_merging_supported: [[bool; 6]; 6],
    /// SRQs.
    pub srq_supported: bool,
    /// `srq_watermarks_supported`.
    pub srq_watermarks_supported: u32,
    /// An EP may use an SRQ of another PZ.
    pub srq_ep_pz_difference_supported: bool,
    /// `srq_info_supported`.
    pub srq_info_supported: u32,
    /// `ep_recv_info_supported`.
    pub ep_recv_info_supported: u32,
    /// LMRs need `dat_lmr_sync_rdma_*` (false: memory is coherent with RDMA).
    pub lmr_sync_req: bool,
    /// A DTO call returns only after its completion can be reported asynchronously.
    pub dto_async_return_guaranteed: bool,
    /// RDMA READ targets need REMOTE_WRITE too (iWARP); false for IB/RoCE.
    pub rdma_write_for_rdma_read_req: bool,
    /// RDMA READ exposes the LMR's rmr_context.
    pub rdma_read_lmr_rmr_context_exposure: bool,
    /// `DAT_RMR_SCOPE_*`.
    pub rmr_scope_supported: u32,
    /// Calls are async-signal-safe.
    pub is_signal_safe: bool,
    /// High availability.
    pub ha_supported: bool,
    /// `DAT_HA_LB_*`.
    pub ha_loadbalancing: u32,
    /// Provider-specific attributes (name, value): `DAT_IB_RDMA_READ`,
    /// `DAT_IB_TRANSPORT_MTU`, `DAT_IB_CMP_AND_SWAP`, `DAT_IB_FETCH_AND_ADD`, ...
    pub provider_specific_attr: Vec<(String, String)>,
}

/// An open interface adapter. Cheap to clone; objects created on it hold a clone.
#[derive(Clone, Debug)]
pub struct Ia {
    inner: Arc<IaInner>,
}

#[derive(Debug)]
struct IaInner {
    name: String,
    spec: IaSpec,
    ctx: Context,
    attr: IaAttr,
    provider: ProviderAttr,
    /// The connection manager on the IA's address, started by the first connect or listen.
    cm: OnceLock<Cm>,
    /// The async EVD and the thread reporting the device's async events on it.
    device_events: device_events::Watcher,
    /// Its PSPs and RSPs by connection qualifier (`dat_cr_handoff` finds its target here).
    service_points: crate::sp::ServicePoints,
    /// Its objects with activity an abrupt close ends (weakly).
    children: close::Children,
}

impl Ia {
    /// Opens the IA called `name` on the device, port and address of `spec`.
    pub fn open(name: &str, spec: &IaSpec) -> DatResult<Ia> {
        let ctx = ferrodat_driver::open(&spec.device).map_err(|e| {
            DatError::new(abi::ret::PROVIDER_NOT_FOUND, subtype::NO_SUBTYPE)
                .with_detail(format!("IA {name}: {e}"))
        })?;
        let driver_error = |what: &str, e: ferrodat_driver::Error| {
            DatError::insufficient_resources(subtype::RESOURCE_DEVICE)
                .with_detail(format!("IA {name}: {what}: {e}"))
        };
        let dev = ctx.query_device().map_err(|e| driver_error("query the device", e))?;
        let port = ctx.query_port(spec.port).map_err(|e| driver_error("query the port", e))?;
        if port.state != ferrodat_driver::PortState::Active {
            return Err(DatError::insufficient_resources(subtype::RESOURCE_DEVICE).with_detail(
                format!(
                    "IA {name}: port {} of {} is {:?}, not active; check the link (or, for \
                     softhca, its configuration)",
                    spec.port, spec.device, port.state
                ),
            ));
        }
        let (gid_index, gid) =
            ctx.source_gid(spec.port).map_err(|e| driver_error("read the source GID", e))?;
        let address = match spec.address {
            Some(a) => a,
            None => address_of_gid(gid).ok_or_else(|| {
                DatError::invalid_parameter(1).with_detail(format!(
                    "IA {name}: the source GID of {} port {} (index {gid_index}) carries no IP \
                     address; name one in the dat.conf instance data",
                    spec.device, spec.port
                ))
            })?,
        };
        // A DAT consumer may block in any wait (a connection event, a CNO, its DTO EVD)
        // while its peers need this device to answer (their SENDs, READs from memory the
        // ring carries, our requests' ACKs): a software HCA runs its progress thread for
        // that, as silicon serves them by itself (FERRODAT_SOFTHCA_PROGRESS_THREAD=0 for a
        // consumer that polls all the time).
        ctx.channel()
            .serve_in_background()
            .map_err(|e| driver_error("serve the device while the consumer waits", e))?;
        let mtu_bytes = 128u32 << port.active_mtu.clamp(1, 5);
        // An IA lives in one process: it can have no more endpoints than the process QPs.
        let max_eps = ctx.channel().qps_per_process().map_or(dev.max_qp, |n| n.min(dev.max_qp));
        let attr = IaAttr {
            adapter_name: spec.device.clone(),
            vendor_name: vendor_name(dev.vendor_id).to_string(),
            hardware_version: (dev.hw_ver, 0),
            firmware_version: ((dev.fw_ver >> 32) as u32, (dev.fw_ver >> 16) as u32 & 0xffff),
            address,
            max_eps,
            max_dto_per_ep: dev.max_qp_wr,
            max_rdma_read_per_ep_in: dev.max_qp_rd_atom,
            max_rdma_read_per_ep_out: dev.max_qp_init_rd_atom,
            max_evds: dev.max_cq,
            max_evd_qlen: dev.max_cqe,
            max_iov_segments_per_dto: dev.max_sge,
            max_lmrs: dev.max_mr,
            max_lmr_block_size: dev.max_mr_size,
            max_lmr_virtual_address: u64::MAX,
            max_pzs: dev.max_pd,
            max_message_size: port.max_msg_sz,
            max_rdma_size: port.max_msg_sz,
            // Type 1 memory windows, if the device has them (MEM_WINDOW).
            max_rmrs: if dev.device_cap_flags & device_cap::MEM_WINDOW != 0 {
                dev.max_mw
            } else {
                0
            },
            max_rmr_target_address: if dev.max_mw > 0 { u64::MAX } else { 0 },
            max_srqs: dev.max_srq,
            max_ep_per_srq: max_eps,
            max_recv_per_srq: dev.max_srq_wr,
            max_iov_segments_per_rdma_read: dev.max_sge_rd.min(dev.max_sge),
            max_iov_segments_per_rdma_write: dev.max_sge,
            max_rdma_read_in: dev.max_qp_rd_atom.saturating_mul(dev.max_qp),
            max_rdma_read_out: dev.max_qp_init_rd_atom.saturating_mul(dev.max_qp),
            max_rdma_read_per_ep_in_guaranteed: true,
            max_rdma_read_per_ep_out_guaranteed: true,
            zb_supported: false,
            extension_supported: extension::IB,
            extension_version: IB_EXTENSION_VERSION as u32,
            transport_attr: Vec::new(),
            vendor_attr: Vec::new(),
        };
        let truth = |b: bool| if b { "TRUE" } else { "FALSE" }.to_string();
        let atomics = dev.atomic_cap != 0;
        let provider = ProviderAttr {
            provider_name: "ferrodat".into(),
            provider_version: (
                env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or(0),
                env!("CARGO_PKG_VERSION_MINOR").parse().unwrap_or(0),
            ),
            dapl_version: (2, 0),
            // The union of the DAT_MEM_TYPE values, as udat.h defines it (OFA reports
            // VIRTUAL | LMR, both of which it then refuses to register but the first).
            lmr_mem_types_supported: mem_type::VIRTUAL | mem_type::LMR | mem_type::SHARED_VIRTUAL,
            iov_ownership_on_return: iov_ownership::CONSUMER,
            dat_qos_supported: qos::BEST_EFFORT,
            completion_flags_supported: completion_flags::SUPPRESS
                | completion_flags::SOLICITED_WAIT
                | completion_flags::UNSIGNALLED
                | completion_flags::BARRIER_FENCE
                | completion_flags::EVD_THRESHOLD,
            is_thread_safe: false,
            max_private_data_size: crate::cm::wire::MAX_PRIVATE_DATA as u32,
            supports_multipath: false,
            // DAT_PSP_PROVIDER_FLAG is honoured (ep::provider).
            ep_creator: ep_creator::IFASKED,
            pz_support: pz_support::UNIQUE,
            optimal_buffer_alignment: 64,
            evd_stream_merging_supported: [[true; 6]; 6],
            srq_supported: dev.max_srq > 0,
            srq_watermarks_supported: 0,
            srq_ep_pz_difference_supported: false,
            srq_info_supported: 0,
            ep_recv_info_supported: 0,
            lmr_sync_req: false,
            dto_async_return_guaranteed: false,
            rdma_write_for_rdma_read_req: false,
            rdma_read_lmr_rmr_context_exposure: false,
            rmr_scope_supported: rmr_scope::EP,
            is_signal_safe: false,
            ha_supported: false,
            ha_loadbalancing: 0,
            provider_specific_attr: vec![
                ("DAT_IB_RDMA_READ".into(), truth(true)),
                ("DAT_IB_TRANSPORT_MTU".into(), mtu_bytes.to_string()),
                ("DAT_IB_CMP_AND_SWAP".into(), truth(atomics)),
                ("DAT_IB_FETCH_AND_ADD".into(), truth(atomics)),
                ("DAT_IB_PORT".into(), spec.port.to_string()),
            ],
        };
        let device_events = device_events::Watcher::start(&ctx, name, spec.port).map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY).with_detail(format!(
                "IA {name}: starting the thread that reads the device's async events: {e} \
                     (out of file descriptors or threads? see ulimit -n and -u)"
            ))
        })?;
        Ok(Ia {
            inner: Arc::new(IaInner {
                name: name.to_string(),
                spec: spec.clone(),
                ctx,
                attr,
                provider,
                cm: OnceLock::new(),
                device_events,
                service_points: Default::default(),
                children: close::Children::default(),
            }),
        })
    }

    /// Both handles are the same IA.
    pub fn same(&self, other: &Ia) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The IA's registry name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The device, port and address it was opened on.
    pub fn spec(&self) -> &IaSpec {
        &self.inner.spec
    }

    /// `dat_ia_query`: the IA's attributes.
    pub fn attr(&self) -> &IaAttr {
        &self.inner.attr
    }

    /// `dat_ia_query`: the provider's attributes.
    pub fn provider_attr(&self) -> &ProviderAttr {
        &self.inner.provider
    }

    /// The connection manager on the IA's address (started on first use).
    pub(crate) fn service_points(&self) -> &crate::sp::ServicePoints {
        &self.inner.service_points
    }

    pub(crate) fn cm(&self) -> DatResult<&Cm> {
        if let Some(cm) = self.inner.cm.get() {
            return Ok(cm);
        }
        let cm = Cm::new(self.inner.attr.address).map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY).with_detail(format!(
                "IA {}: starting the connection manager: {e}",
                self.inner.name
            ))
        })?;
        Ok(self.inner.cm.get_or_init(|| cm))
    }

    /// `dat_ia_open`'s async EVD: asynchronous errors (EVD overflow, EP broken, ...) are
    /// reported there from now on. It is held weakly: the consumer owns it.
    pub fn set_async_evd(&self, evd: &Evd) {
        self.inner.device_events.events().set_async_evd(evd);
    }

    /// The async EVD, while the consumer holds it.
    pub fn async_evd(&self) -> Option<Evd> {
        self.inner.device_events.events().async_evd()
    }

    /// Reports an asynchronous error on the async EVD (dropped if there is none, or if it
    /// is full: DAT lets a full async EVD lose events).
    pub(crate) fn report_async(&self, number: u32, object: ObjectId) {
        self.inner.device_events.events().report(number, object);
    }

    /// The device's async events for the CQ or QP created with `user_handle` are reported
    /// for `object` (an EVD or endpoint, which acts on them) while `owner` lives
    /// ([`device_events`]).
    pub(crate) fn watch_device_object(
        &self,
        user_handle: u64,
        object: ObjectId,
        owner: Weak<dyn DeviceErrorTarget>,
    ) {
        self.inner.device_events.events().watch(user_handle, object, owner);
    }

    /// The CQ or QP created with `user_handle` is gone: its events name nothing now.
    pub(crate) fn forget_device_object(&self, user_handle: u64) {
        self.inner.device_events.events().forget(user_handle);
    }

    /// Queues `event` on `evd`; if it is full, reports `DAT_ASYNC_ERROR_EVD_OVERFLOW` for
    /// it on the async EVD, as the event is lost.
    pub(crate) fn post_or_report(&self, evd: &Evd, event: Event) {
        if evd.post_event(event).is_err() {
            self.report_async(ferrodat_abi::dat::event::ASYNC_ERROR_EVD_OVERFLOW, evd.id());
        }
    }

    /// The driver context the IA's objects are made on.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }
}

/// The IP address a RoCE v2 GID is derived from: IPv4-mapped (`::ffff:a.b.c.d`) or a plain
/// IPv6 GID; None for the zero GID or a link-local one with no address in it.
fn address_of_gid(gid: [u8; 16]) -> Option<IpAddr> {
    let v6 = Ipv6Addr::from(gid);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return (v4 != Ipv4Addr::UNSPECIFIED).then_some(IpAddr::V4(v4));
    }
    let link_local = gid[0] == 0xfe && gid[1] & 0xc0 == 0x80;
    (!v6.is_unspecified() && !link_local).then_some(IpAddr::V6(v6))
}

fn vendor_name(vendor_id: u32) -> &'static str {
    match vendor_id {
        0x02c9 | 0x15b3 => "Mellanox Technologies (NVIDIA)",
        _ => "unknown vendor",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_data_parses_and_refuses_what_it_cannot_use() {
        let spec = IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
        assert_eq!(spec.device, "softhca0");
        assert_eq!(spec.port, 1);
        assert_eq!(spec.address, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(IaSpec::parse("  mlx5_0  ").unwrap().port, 1);
        assert_eq!(IaSpec::parse("mlx5_0 2").unwrap().address, None);
        for (bad, says) in [
            ("", "no device named"),
            ("softhca0 0", "port \"0\""),
            ("softhca0 x", "port \"x\""),
            ("softhca0 1 not-an-ip", "is not an IP address"),
            ("softhca0 1 127.0.0.1 extra", "4 words"),
        ] {
            let e = IaSpec::parse(bad).unwrap_err();
            assert_eq!(e.code(), DatError::invalid_parameter(1).code(), "{bad:?}");
            assert!(e.to_string().contains(says), "{bad:?}: {e}");
            assert!(e.to_string().contains("ferrodat conf"), "{e}");
        }
    }

    #[test]
    fn the_address_comes_out_of_an_ipv4_mapped_gid() {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 1, 2, 3]);
        assert_eq!(address_of_gid(gid), Some("10.1.2.3".parse().unwrap()));
        assert_eq!(address_of_gid([0; 16]), None);
        let mut link_local = [0u8; 16];
        link_local[0] = 0xfe;
        link_local[1] = 0x80;
        link_local[15] = 1;
        assert_eq!(address_of_gid(link_local), None);
    }
}
