//! Local memory regions: memory registered with the device in a PZ. The lmr_context is
//! the region's local key, the rmr_context its remote key (what a peer names in RDMA).
//!
//! Memory is coherent with RDMA on every platform ferrodat runs on, so the provider
//! reports `lmr_sync_req` FALSE and `dat_lmr_sync_rdma_read/write` only check their
//! arguments.

use crate::error::{DatError, DatResult};
use crate::pz::Pz;
use ferrodat_abi::dat::{mem_priv, mem_type, subtype, va_type};
use ferrodat_driver::{Access, MrBuf, MrRaw};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// DAT memory privileges (`DAT_MEM_PRIV_*`, with the IB remote-atomic extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemPriv(pub u32);

impl MemPriv {
    /// The driver access flags: IB needs local write wherever the device writes (remote
    /// write, remote atomics), as OFA dapl also grants. A region the device may write is
    /// also registered for memory-window binding (MW_BIND), so RMRs can be bound in it:
    /// DAT has no privilege for that, and MW_BIND makes the kernel pin the pages writable,
    /// which such a region needs anyway (a read-only region stays bindable-free, so memory
    /// mapped read-only can still be registered).
    pub fn access(self) -> DatResult<Access> {
        let known = mem_priv::ALL | mem_priv::IB_REMOTE_ATOMIC;
        if self.0 & !known != 0 {
            return Err(DatError::invalid_parameter(6).with_detail(format!(
                "memory privileges {:#x} carry unknown bits {:#x}; use DAT_MEM_PRIV_* flags",
                self.0,
                self.0 & !known
            )));
        }
        let mut a = Access::LOCAL_READ;
        let device_writes =
            mem_priv::LOCAL_WRITE | mem_priv::REMOTE_WRITE | mem_priv::IB_REMOTE_ATOMIC;
        if self.0 & device_writes != 0 {
            a |= Access::LOCAL_WRITE | Access::MW_BIND;
        }
        if self.0 & mem_priv::REMOTE_WRITE != 0 {
            a |= Access::REMOTE_WRITE;
        }
        if self.0 & mem_priv::REMOTE_READ != 0 {
            a |= Access::REMOTE_READ;
        }
        if self.0 & mem_priv::IB_REMOTE_ATOMIC != 0 {
            a |= Access::REMOTE_ATOMIC;
        }
        Ok(a)
    }
}

/// A `DAT_LMR_TRIPLET`: a piece of a registered region, as DTOs name local memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LmrTriplet {
    /// The region's lmr_context.
    pub lmr_context: u32,
    /// Start address.
    pub virtual_address: u64,
    /// Length in bytes.
    pub segment_length: u64,
}

/// A `DAT_RMR_TRIPLET`: where an RDMA operation goes in the peer's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmrTriplet {
    /// The peer region's rmr_context.
    pub rmr_context: u32,
    /// Target address.
    pub virtual_address: u64,
    /// Length in bytes.
    pub segment_length: u64,
}

/// A local memory region. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Lmr {
    inner: Arc<LmrInner>,
}

#[derive(Debug)]
struct LmrInner {
    pz: Pz,
    region: Region,
    privileges: MemPriv,
    /// RMRs bound in it ([`LmrInUse`]): `dat_lmr_free` is refused while any is.
    rmrs_bound: AtomicU32,
}

/// An RMR is bound in the LMR: keeps it registered and refuses [`Lmr::free`] until dropped.
#[derive(Debug)]
pub(crate) struct LmrInUse(Lmr);

impl LmrInUse {
    pub(crate) fn new(lmr: &Lmr) -> LmrInUse {
        lmr.inner.rmrs_bound.fetch_add(1, Ordering::AcqRel);
        LmrInUse(lmr.clone())
    }
}

impl Drop for LmrInUse {
    fn drop(&mut self) {
        self.0.inner.rmrs_bound.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug)]
enum Region {
    /// The consumer's memory (`DAT_MEM_TYPE_VIRTUAL`, `_SHARED_VIRTUAL`).
    Consumer(MrRaw),
    /// Memory the LMR owns (Rust consumers' convenience).
    Owned(MrBuf),
    /// The memory of another LMR registered again (`DAT_MEM_TYPE_LMR`). `_owner` is that
    /// LMR when it owns the memory, which must outlive this registration: it is dropped
    /// after `mr` (fields drop in order).
    Again { mr: MrRaw, _owner: Option<Lmr> },
}

macro_rules! region {
    ($r:expr, $m:ident) => {
        match $r {
            Region::Consumer(mr) | Region::Again { mr, .. } => mr.$m(),
            Region::Owned(mr) => mr.$m(),
        }
    };
}

impl Lmr {
    /// `dat_lmr_create` of `DAT_MEM_TYPE_VIRTUAL` memory: `length` bytes at `address`.
    ///
    /// # Safety
    /// The memory must stay mapped until the LMR is freed, and the caller must not access
    /// it through Rust references while the device may use it.
    pub unsafe fn create_virtual(
        pz: &Pz,
        address: *mut u8,
        length: u64,
        privileges: MemPriv,
    ) -> DatResult<Lmr> {
        let access = privileges.access()?;
        if address.is_null() || length == 0 {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "dat_lmr_create: region {address:p} + {length} bytes; register at least one byte \
                 of mapped memory"
            )));
        }
        let len = usize::try_from(length).map_err(|_| DatError::invalid_parameter(4))?;
        let attr = pz.ia().attr();
        if length > attr.max_lmr_block_size {
            return Err(DatError::invalid_parameter(4).with_detail(format!(
                "dat_lmr_create: {length} bytes exceed max_lmr_block_size {}",
                attr.max_lmr_block_size
            )));
        }
        if (address as u64).checked_add(length).is_none() {
            return Err(DatError::invalid_parameter(4).with_detail(format!(
                "dat_lmr_create: region {address:p} + {length} bytes runs past the end of the \
                 address space"
            )));
        }
        // SAFETY: forwarded from this function's contract.
        let mr = unsafe { pz.pd().reg_mr_raw(address, len, access) }.map_err(|e| {
            // Memory the process does not have, or a range no process can have, is the
            // consumer's mistake, not a resource the device ran out of.
            match e.errno_value() {
                Some(libc::EFAULT) => DatError::invalid_parameter(3).with_detail(format!(
                    "dat_lmr_create: {length} bytes at {address:p} are not mapped (with the \
                     access the privileges need): {e}"
                )),
                Some(libc::EINVAL) => DatError::invalid_parameter(4).with_detail(format!(
                    "dat_lmr_create: {length} bytes at {address:p} is no range memory can be \
                     registered over: {e}"
                )),
                _ => register_error(e),
            }
        })?;
        Ok(Lmr::from_region(pz, Region::Consumer(mr), privileges))
    }

    /// `dat_lmr_create` of `DAT_MEM_TYPE_LMR`: the memory `original` registered, registered
    /// again in `pz` (of the same IA) with `privileges`, which may differ from the
    /// original's. The two are independent registrations: either may be freed first.
    pub fn create_from(original: &Lmr, pz: &Pz, privileges: MemPriv) -> DatResult<Lmr> {
        let access = privileges.access()?;
        if !original.inner.pz.ia().same(pz.ia()) {
            return Err(DatError::invalid_parameter(3).with_detail(
                "dat_lmr_create(DAT_MEM_TYPE_LMR): the LMR to register again belongs to another \
                 IA; register its memory in this IA with DAT_MEM_TYPE_VIRTUAL",
            ));
        }
        let address = original.registered_address() as *mut u8;
        let len = original.registered_size() as usize;
        // SAFETY: the memory is registered by `original` already, so it is mapped: the
        // consumer keeps it mapped until its LMRs are freed (DAT), and memory an LMR owns
        // is kept here, in `_owner`, for as long as the new registration lives.
        let mr = unsafe { pz.pd().reg_mr_raw(address, len, access) }.map_err(register_error)?;
        // Whoever keeps the memory alive for `original` keeps it for this one too: itself if
        // it owns the memory, its own keeper if it is a registration again of owned memory.
        let owner = match &original.inner.region {
            Region::Owned(_) => Some(original.clone()),
            Region::Again { _owner, .. } => _owner.clone(),
            Region::Consumer(_) => None,
        };
        Ok(Lmr::from_region(pz, Region::Again { mr, _owner: owner }, privileges))
    }

    /// An LMR over `length` bytes of zeroed memory it owns (page-aligned).
    pub fn alloc(pz: &Pz, length: usize, privileges: MemPriv) -> DatResult<Lmr> {
        let access = privileges.access()?;
        let mr = pz.pd().alloc_mr(length, access).map_err(register_error)?;
        Ok(Lmr::from_region(pz, Region::Owned(mr), privileges))
    }

    /// As [`Lmr::alloc`], in a memfd mapped shared: on softhca a peer's RDMA WRITEs into
    /// it are placed directly (one copy instead of two, none on this process's CPU); on
    /// hardware it is ordinary memory. Costs one file descriptor while it lives.
    pub fn alloc_shared(pz: &Pz, length: usize, privileges: MemPriv) -> DatResult<Lmr> {
        let access = privileges.access()?;
        let mr = pz.pd().alloc_mr_shared(length, access).map_err(register_error)?;
        Ok(Lmr::from_region(pz, Region::Owned(mr), privileges))
    }

    fn from_region(pz: &Pz, region: Region, privileges: MemPriv) -> Lmr {
        let rmrs_bound = AtomicU32::new(0);
        Lmr { inner: Arc::new(LmrInner { pz: pz.clone(), region, privileges, rmrs_bound }) }
    }

    /// The lmr_context (local key).
    pub fn lmr_context(&self) -> u32 {
        region!(&self.inner.region, lkey)
    }

    /// The rmr_context (remote key) peers use for RDMA into this region.
    pub fn rmr_context(&self) -> u32 {
        region!(&self.inner.region, rkey)
    }

    /// `registered_address`: where the region starts.
    pub fn registered_address(&self) -> u64 {
        region!(&self.inner.region, addr)
    }

    /// `registered_size` in bytes.
    pub fn registered_size(&self) -> u64 {
        region!(&self.inner.region, len) as u64
    }

    /// The privileges it was created with.
    pub fn privileges(&self) -> MemPriv {
        self.inner.privileges
    }

    /// Its PZ.
    pub fn pz(&self) -> &Pz {
        &self.inner.pz
    }

    /// `dat_lmr_free`: refused while an RMR is bound in it (`DAT_INVALID_STATE_LMR_IN_USE`;
    /// the caller keeps its handle then). DEREG_MR runs when the last handle goes.
    pub fn free(self) -> Result<(), (Lmr, DatError)> {
        let bound = self.inner.rmrs_bound.load(Ordering::Acquire);
        if bound > 0 {
            let e =
                DatError::invalid_state(subtype::INVALID_STATE_LMR_IN_USE).with_detail(format!(
                    "dat_lmr_free: {bound} RMR(s) are bound in this LMR; unbind them (dat_rmr_bind \
                 with a zero-length triplet) or free them first"
                ));
            return Err((self, e));
        }
        Ok(())
    }

    /// RMRs may be bound in it: it was registered writable, hence with MW_BIND
    /// ([`MemPriv::access`]).
    pub fn rmr_bindable(&self) -> bool {
        self.inner.privileges.access().is_ok_and(|a| a.contains(Access::MW_BIND))
    }

    /// The same region (the same registration, not an equal one).
    pub fn same(&self, other: &Lmr) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A triplet for `length` bytes at `offset` (bounds checked).
    pub fn triplet(&self, offset: u64, length: u64) -> DatResult<LmrTriplet> {
        match offset.checked_add(length) {
            Some(end) if end <= self.registered_size() => Ok(LmrTriplet {
                lmr_context: self.lmr_context(),
                virtual_address: self.registered_address() + offset,
                segment_length: length,
            }),
            _ => Err(DatError::invalid_parameter(2).with_detail(format!(
                "{length} bytes at offset {offset} pass the end of the {}-byte LMR",
                self.registered_size()
            ))),
        }
    }

    /// Volatile copy out of the region (the device may be writing it).
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> DatResult<()> {
        let r = match &self.inner.region {
            Region::Consumer(mr) | Region::Again { mr, .. } => mr.read(offset, dst),
            Region::Owned(mr) => mr.read(offset, dst),
        };
        r.map_err(|e| DatError::invalid_parameter(2).with_detail(e.to_string()))
    }

    /// Volatile copy into the region.
    pub fn write(&self, offset: usize, src: &[u8]) -> DatResult<()> {
        let r = match &self.inner.region {
            Region::Consumer(mr) | Region::Again { mr, .. } => mr.write(offset, src),
            Region::Owned(mr) => mr.write(offset, src),
        };
        r.map_err(|e| DatError::invalid_parameter(2).with_detail(e.to_string()))
    }

    /// `dat_lmr_sync_rdma_read` / `_write`: memory is coherent with RDMA here, so this only
    /// checks that every triplet lies inside a region of this IA (by lmr_context).
    pub fn sync_rdma(
        lmrs: &[&Lmr],
        triplets: impl IntoIterator<Item = LmrTriplet>,
    ) -> DatResult<()> {
        for (i, t) in triplets.into_iter().enumerate() {
            let inside = lmrs.iter().any(|l| {
                l.lmr_context() == t.lmr_context
                    && t.virtual_address >= l.registered_address()
                    && t.virtual_address
                        .checked_add(t.segment_length)
                        .is_some_and(|end| end <= l.registered_address() + l.registered_size())
            });
            if !inside {
                return Err(DatError::invalid_parameter(2).with_detail(format!(
                    "triplet {i} ({:#x} + {} bytes, lmr_context {:#x}) is not inside a registered \
                     region",
                    t.virtual_address, t.segment_length, t.lmr_context
                )));
            }
        }
        Ok(())
    }
}

/// `DAT_LMR_PARAM`, as `dat_lmr_query` reports it.
#[derive(Clone, Debug)]
pub struct LmrParam {
    /// `ia_handle`.
    pub ia: crate::ia::Ia,
    /// `mem_type`: `DAT_MEM_TYPE_VIRTUAL`, the only kind registered here.
    pub mem_type: u32,
    /// `region_desc.for_va`: the address registered.
    pub region_address: u64,
    /// `length`: bytes asked for.
    pub length: u64,
    /// `pz_handle`.
    pub pz: Pz,
    /// `mem_priv`: the privileges given at creation.
    pub mem_priv: MemPriv,
    /// `va_type`: `DAT_VA_TYPE_VA` (zero-based addressing is not offered).
    pub va_type: u32,
    /// `lmr_context`.
    pub lmr_context: u32,
    /// `rmr_context`.
    pub rmr_context: u32,
    /// `registered_size`.
    pub registered_size: u64,
    /// `registered_address`.
    pub registered_address: u64,
}

impl Lmr {
    /// `dat_lmr_query`: every field of `DAT_LMR_PARAM`. The device registers exactly the
    /// bytes asked for, so `length` and `registered_size` agree, as do the two addresses.
    /// The region is described by its address whatever the memory type it was created
    /// with (the C API reports the type and description the consumer gave).
    pub fn query(&self) -> LmrParam {
        LmrParam {
            ia: self.inner.pz.ia().clone(),
            mem_type: mem_type::VIRTUAL,
            region_address: self.registered_address(),
            length: self.registered_size(),
            pz: self.inner.pz.clone(),
            mem_priv: self.inner.privileges,
            va_type: va_type::VA,
            lmr_context: self.lmr_context(),
            rmr_context: self.rmr_context(),
            registered_size: self.registered_size(),
            registered_address: self.registered_address(),
        }
    }
}

fn register_error(e: ferrodat_driver::Error) -> DatError {
    DatError::insufficient_resources(subtype::RESOURCE_MEMORY_REGION)
        .with_detail(format!("dat_lmr_create: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileges_map_to_the_access_ib_needs() {
        let a = |p| MemPriv(p).access().unwrap();
        assert_eq!(a(mem_priv::LOCAL_READ), Access::LOCAL_READ);
        assert_eq!(a(mem_priv::REMOTE_READ), Access::REMOTE_READ);
        assert!(a(mem_priv::REMOTE_WRITE).contains(Access::LOCAL_WRITE | Access::REMOTE_WRITE));
        assert!(
            a(mem_priv::IB_REMOTE_ATOMIC).contains(Access::LOCAL_WRITE | Access::REMOTE_ATOMIC)
        );
        assert_eq!(
            a(mem_priv::ALL),
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::MW_BIND
        );
        // Writable regions can take RMRs; read-only ones are not pinned writable for it.
        assert!(a(mem_priv::LOCAL_WRITE).contains(Access::MW_BIND));
        assert!(!a(mem_priv::REMOTE_READ | mem_priv::LOCAL_READ).contains(Access::MW_BIND));
        let e = MemPriv(0x1000).access().unwrap_err();
        assert!(e.to_string().contains("unknown bits 0x1000"), "{e}");
    }
}
