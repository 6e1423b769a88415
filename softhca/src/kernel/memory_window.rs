//! ALLOC_MW and DEALLOC_MW (`ib_uverbs_alloc_mw` + `mlx5_ib_alloc_mw`, `uverbs_free_mw` +
//! `mlx5_ib_dealloc_mw`).
//!
//! A window is an mkey from the MR key space, created free (no translation): it grants
//! nothing until a bind WQE on a QP of its PD gives it a range ([`crate::hca::mr`]). Only
//! type 1 windows are modelled; ALLOC_MW of type 2 is refused with EOPNOTSUPP (the device
//! reports MEM_WINDOW without MEM_WINDOW_TYPE_2B, see [`super::caps::DEVICE_CAP_FLAGS`]).

use super::Session;
use super::call::Call;
use super::handles::{Kind, Object};
use crate::errno::Errno;
use crate::objects::Mw;
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, mw_type};
use zerocopy::{FromBytes, IntoBytes};

pub(crate) fn alloc_mw(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::AllocMw>()?;
    s.context()?;
    // A failed PD lookup is its own errno (ENOENT: no such handle, EINVAL: not a PD), as
    // for every other command since the kernel propagates rdma_lookup_get_uobject's errors.
    let pdn = s.file.handles.get(cmd.pd_handle, Kind::Pd)?;
    if cmd.mw_type != mw_type::TYPE_1 && cmd.mw_type != mw_type::TYPE_2 {
        return Err(Errno::EINVAL);
    }
    check_mlx5_request(c)?;
    if cmd.mw_type == mw_type::TYPE_2 {
        return Err(Errno::EOPNOTSUPP);
    }
    let (index, variant) = s.dev.alloc_mkey_index()?;
    let rkey = index << 8 | u32::from(variant);
    // mlx5_ib_alloc_mw answers `{comp_mask, response_length}` in as much of the driver
    // response as the caller gave room for (rdma-core gives none).
    let driver_len = c.driver_out.len.min(8);
    let written = if driver_len > 0 {
        let resp = [0u32.to_ne_bytes(), (driver_len as u32).to_ne_bytes()].concat();
        c.driver_write(&resp[..driver_len])
    } else {
        Ok(())
    };
    let written = written.and_then(|()| {
        let mw_handle = s.file.handles.next_free();
        c.respond(uverbs::AllocMwResp { mw_handle, rkey }.as_bytes())
    });
    if let Err(e) = written {
        s.dev.free_mkey_index(index);
        return Err(e);
    }
    s.dev.engine().add_memory_window(rkey, pdn);
    s.dev.state().mws.insert(index, Mw { index, rkey, pdn });
    s.file.handles.insert(Object::Mw(index));
    Ok(())
}

/// The driver request of `mlx5_ib_alloc_mw`: `min(inlen, 8)` bytes are read (a fault if
/// the caller declared some but they are unreadable), every field but `num_klms` must be
/// zero and anything past the struct cleared, else EOPNOTSUPP.
fn check_mlx5_request(c: &Call<'_>) -> Result<(), Errno> {
    let size = size_of::<mlx5::AllocMw>();
    let mut bytes = c.driver_read(c.driver_in.len().min(size))?;
    bytes.resize(size, 0);
    let req = mlx5::AllocMw::read_from_bytes(&bytes).map_err(|_| Errno::EINVAL)?;
    if req.comp_mask != 0 || req.reserved1 != 0 || req.reserved2 != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if c.driver_in.len() > size && !c.driver_cleared_from(size) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

pub(crate) fn dealloc_mw(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DeallocMw>()?;
    let index = s.file.handles.get(cmd.mw_handle, Kind::Mw)?;
    // mlx5_ib_dealloc_mw destroys the mkey whether or not it is bound: remote access through
    // its key fails from now on.
    s.dev.state().mws.remove(&index);
    s.dev.free_mkey_index(index);
    s.file.handles.remove(cmd.mw_handle);
    Ok(())
}
