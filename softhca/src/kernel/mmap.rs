//! mmap of the uverbs fd (`ib_uverbs_mmap` → `mlx5_ib_mmap` / `uar_mmap`).
//!
//! The page offset encodes `cmd << 8 | index`. Static UAR pages (REGULAR, WC, NC) map page
//! `index` of the context; the other commands concern things softhca does not offer: the
//! clock pages (not advertised), dynamic UARs (none: `num_dyn_bfregs` is 0) and device
//! memory.

use super::context::Context;
use crate::errno::Errno;
use crate::user_memory;
use ferrodat_abi::mlx5::{MMAP_CMD_MASK, MMAP_CMD_SHIFT, MMAP_INDEX_MASK, mmap_cmd};
use std::ptr::NonNull;

pub(crate) fn mmap(ctx: Option<&Context>, pgoff: u64, len: usize) -> Result<NonNull<u8>, Errno> {
    let page = user_memory::page_size();
    if len == 0 {
        return Err(Errno::EINVAL); // mmap(2) itself refuses an empty mapping
    }
    // The driver sees the VMA, whose length mmap(2) rounded up to whole pages.
    let len = len.div_ceil(page) * page;
    let ctx = ctx.ok_or(Errno::EINVAL)?; // ib_uverbs_get_ucontext_file
    let index = pgoff & MMAP_INDEX_MASK;
    match (pgoff >> MMAP_CMD_SHIFT) & MMAP_CMD_MASK {
        mmap_cmd::REGULAR_PAGE | mmap_cmd::WC_PAGE | mmap_cmd::NC_PAGE => {
            if len != page || index >= ctx.uar.count() as u64 {
                return Err(Errno::EINVAL);
            }
            ctx.uar.map_for_user(index as usize)
        }
        mmap_cmd::ALLOC_WC => {
            if len != page {
                return Err(Errno::EINVAL);
            }
            Err(Errno::EINVAL) // past the static pages, and there are no dynamic ones
        }
        mmap_cmd::GET_CONTIGUOUS_PAGES => Err(Errno::ENOSYS),
        mmap_cmd::CORE_CLOCK => {
            if len != page {
                return Err(Errno::EINVAL);
            }
            Err(Errno::EOPNOTSUPP) // no HCA timer page to expose
        }
        mmap_cmd::CLOCK_INFO => {
            if len != page {
                return Err(Errno::EINVAL);
            }
            Err(Errno::EOPNOTSUPP) // index ≠ V1, or no clock info (clock_info_versions 0)
        }
        // mlx5_ib_mmap_offset: no mmap entry was ever created for any other offset.
        _ => Err(Errno::EINVAL),
    }
}
