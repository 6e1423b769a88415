//! ALLOC_PD, DEALLOC_PD, REG_MR, DEREG_MR (`ib_uverbs_alloc_pd` + `mlx5_ib_alloc_pd`,
//! `ib_uverbs_reg_mr` + `ib_check_mr_access` + `ib_umem_get`, `uverbs_free_pd`).
//!
//! REG_MR pins nothing: it checks the range the way pinning would (mapped, writable when the
//! access needs it) and records it. On-demand paging and the FLUSH access bits are refused
//! with EOPNOTSUPP, as on a device without those capabilities; RLIMIT_MEMLOCK is not
//! charged.

use super::Session;
use super::call::Call;
use super::handles::{Kind, Object};
use crate::errno::Errno;
use crate::fabric::ExportedRegion;
use crate::hca::app_memory::AppSpan;
use crate::hca::mr::MemoryRegion;
use crate::objects::{Mr, Pd};
use crate::shared_backing;
use crate::user_memory::{self, Access};
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, access};
use zerocopy::IntoBytes;

/// `IB_UVERBS_ACCESS_FLUSH_GLOBAL`.
const ACCESS_FLUSH_GLOBAL: u32 = 1 << 8;
/// `IB_UVERBS_ACCESS_FLUSH_PERSISTENT`.
const ACCESS_FLUSH_PERSISTENT: u32 = 1 << 9;
/// `IB_ACCESS_SUPPORTED`: every flag up to FLUSH_PERSISTENT, and the optional range.
const ACCESS_SUPPORTED: u32 = ((ACCESS_FLUSH_PERSISTENT << 1) - 1) | access::OPTIONAL_RANGE;
/// `ib_access_writable`: flags that make the kernel pin the pages for writing.
const ACCESS_WRITABLE: u32 =
    access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC | access::MW_BIND;

pub(crate) fn alloc_pd(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    c.request::<uverbs::AllocPd>()?;
    s.context()?;
    let pdn = s.dev.alloc_pdn()?;
    // mlx5_ib_alloc_pd copies the pdn with ib_copy_to_udata: a caller that gave no room for
    // it gets EFAULT.
    let written = c.driver_write(mlx5::AllocPdResp { pdn }.as_bytes()).and_then(|()| {
        let pd_handle = s.next_handle();
        c.respond(uverbs::AllocPdResp { pd_handle }.as_bytes())
    });
    written?;
    s.dev.state().pds.insert(pdn, Pd { pdn });
    s.file.handles.insert(Object::Pd(pdn));
    Ok(())
}

pub(crate) fn dealloc_pd(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DeallocPd>()?;
    let pdn = s.file.handles.get(cmd.pd_handle, Kind::Pd)?;
    let mut st = s.dev.state();
    // uverbs_free_pd: the PD's usecnt counts its MRs, MWs, QPs and SRQs.
    let busy = st.mrs.values().any(|m| m.pdn == pdn)
        || st.mws.values().any(|m| m.pdn == pdn)
        || st.qps.values().any(|q| q.pdn == pdn)
        || st.srqs.values().any(|q| q.pdn == pdn);
    if busy {
        return Err(Errno::EBUSY);
    }
    st.pds.remove(&pdn);
    drop(st);
    s.file.handles.remove(cmd.pd_handle);
    Ok(())
}

pub(crate) fn reg_mr(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::RegMr>()?;
    let page = user_memory::page_size() as u64;
    if cmd.start & (page - 1) != cmd.hca_va & (page - 1) {
        return Err(Errno::EINVAL);
    }
    s.context()?;
    check_mr_access(cmd.access_flags)?;
    let pdn = s.file.handles.get(cmd.pd_handle, Kind::Pd)?;
    check_umem(cmd.start, cmd.length, page)?;
    let mode = if cmd.access_flags & ACCESS_WRITABLE != 0 { Access::Write } else { Access::Read };
    user_memory::check_mapped(cmd.start, cmd.length, mode)?;
    let (index, variant) = s.dev.alloc_mkey_index()?;
    let key = index << 8 | u32::from(variant);
    let resp = uverbs::RegMrResp { mr_handle: s.next_handle(), lkey: key, rkey: key };
    if let Err(e) = c.respond(resp.as_bytes()) {
        s.dev.free_mkey_index(index);
        return Err(e);
    }
    let mr = Mr {
        index,
        lkey: key,
        rkey: key,
        start: cmd.start,
        length: cmd.length,
        iova: cmd.hca_va,
        access: cmd.access_flags,
        pdn,
    };
    // SAFETY: check_mapped verified the range above; like a pinned umem, the application
    // keeps it mapped until DEREG_MR (the Uverbs memory contract).
    let memory = unsafe { AppSpan::new(cmd.start as usize, cmd.length as usize) };
    s.dev.engine().add_memory_region(MemoryRegion {
        key,
        pdn,
        iova: cmd.hca_va,
        memory,
        access: cmd.access_flags,
    });
    // Memory mapped from a shared file can take RDMA WRITEs and READs placed by the peer
    // itself (one copy, none on this process's CPU); other memory takes them through the
    // ring.
    if crate::fabric::exported_for(cmd.access_flags)
        && let Some(backing) = shared_backing::find(cmd.start, cmd.length)
    {
        let region = ExportedRegion {
            key,
            pdn,
            access: cmd.access_flags,
            iova: cmd.hca_va,
            length: cmd.length,
            file_offset: backing.file_offset,
        };
        // Best effort: a full /dev/shm leaves the region registered, unexported.
        let _ = s.dev.engine().export_memory_region(region, backing.file);
    }
    s.dev.state().mrs.insert(index, mr);
    s.file.handles.insert(Object::Mr(index));
    Ok(())
}

/// `ib_check_mr_access`.
fn check_mr_access(flags: u32) -> Result<(), Errno> {
    let needs_local_write = access::REMOTE_ATOMIC | access::REMOTE_WRITE;
    if flags & needs_local_write != 0 && flags & access::LOCAL_WRITE == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & !ACCESS_SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & (access::ON_DEMAND | ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// The arithmetic checks of `ib_umem_get`: no wrap-around (also after page alignment), at
/// least one page, at most `UINT_MAX` pages.
pub(crate) fn check_umem(addr: u64, len: u64, page: u64) -> Result<(), Errno> {
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    let aligned_end = end.checked_add(page - 1).ok_or(Errno::EINVAL)? & !(page - 1);
    let npages = (aligned_end - (addr & !(page - 1))) / page;
    if npages == 0 || npages > u64::from(u32::MAX) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub(crate) fn dereg_mr(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DeregMr>()?;
    let index = s.file.handles.get(cmd.mr_handle, Kind::Mr)?;
    s.dev.state().mrs.remove(&index);
    s.dev.free_mkey_index(index);
    s.file.handles.remove(cmd.mr_handle);
    Ok(())
}
