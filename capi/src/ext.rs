//! The IB extension entry (`handle_extendedop_func`, reached through libdat2's
//! `dat_extension_op`): RDMA write with immediate, compare-and-swap and fetch-and-add, with
//! their arguments read from the caller's `va_list`.
//!
//! Every argument of these operations is of integer class and 8 bytes or less (counts,
//! flags, pointers, 64-bit values, the 8-byte cookie union), so one reader that takes the
//! next general-purpose slot serves them all. Stable Rust has no `va_arg`; the slots are
//! read by hand, per the x86_64 SysV and AArch64 AAPCS64 rules (`abi::dat::VaList`).

use crate::ep::{ep, ep_body, remote, with_iov};
use crate::mem::triplet;
use crate::ret::{call, not_implemented};
use ferrodat_abi::dat::{self as abi, ib_op};
use ferrodat_engine::error::{DatError, DatResult};

/// Reads integer-class variadic arguments, one 8-byte slot each.
struct VarArgs {
    list: abi::VaList,
}

impl VarArgs {
    /// The next argument's 64 bits (narrower ones are in the low bits).
    ///
    /// # Safety
    /// The caller must have passed at least one more integer-class argument.
    #[cfg(target_arch = "x86_64")]
    unsafe fn next(&mut self) -> u64 {
        // SAFETY: `list` is the pointer to the caller's __va_list_tag that va_start set up;
        // below 48 the next argument is in the register save area, else on the stack.
        unsafe {
            let tag = &mut *self.list;
            if tag.gp_offset < 48 {
                let v = tag
                    .reg_save_area
                    .cast::<u8>()
                    .add(tag.gp_offset as usize)
                    .cast::<u64>()
                    .read_unaligned();
                tag.gp_offset += 8;
                v
            } else {
                let v = tag.overflow_arg_area.cast::<u64>().read_unaligned();
                tag.overflow_arg_area = tag.overflow_arg_area.cast::<u8>().add(8).cast();
                v
            }
        }
    }

    /// As above, for AArch64: registers at `__gr_top + __gr_offs` while the offset is
    /// negative, then the stack in 8-byte steps.
    ///
    /// # Safety
    /// As above.
    #[cfg(target_arch = "aarch64")]
    unsafe fn next(&mut self) -> u64 {
        // SAFETY: the caller's va_list copy set up by va_start.
        unsafe {
            let l = &mut self.list;
            if l.__gr_offs < 0 {
                let v = l
                    .__gr_top
                    .cast::<u8>()
                    .offset(l.__gr_offs as isize)
                    .cast::<u64>()
                    .read_unaligned();
                l.__gr_offs += 8;
                v
            } else {
                let v = l.__stack.cast::<u64>().read_unaligned();
                l.__stack = l.__stack.cast::<u8>().add(8).cast();
                v
            }
        }
    }
}

/// `handle_extendedop_func(handle, op, args)`.
pub(crate) unsafe extern "C" fn extended_op(
    h: abi::Handle,
    op: abi::ExtendedOp,
    args: abi::VaList,
) -> abi::Return {
    let mut a = VarArgs { list: args };
    match op {
        ib_op::RDMA_WRITE_IMMED => call("dat_ib_post_rdma_write_immed", || {
            // SAFETY: dat_ib_post_rdma_write_immed passes count, lmr*, cookie, rmr*,
            // immediate, flags, in that order (dat_ib_extensions.h).
            let (count, lmr, cookie, rmr, immediate, flags) = unsafe {
                (
                    a.next() as i32,
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                    a.next() as u32,
                )
            };
            let o = ep(h)?;
            // SAFETY: the consumer's triplet.
            let r = unsafe { remote(rmr, 4) }?;
            // SAFETY: the consumer's IOV of `count` triplets.
            unsafe {
                with_iov(count, lmr, |l| {
                    ep_body(&o).ep.post_rdma_write_immed(l, cookie, &r, immediate, flags)
                })
            }
        }),
        ib_op::CMP_AND_SWAP => call("dat_ib_post_cmp_and_swap", || {
            // SAFETY: compare, swap, lmr*, cookie, rmr*, flags (dat_ib_extensions.h).
            let (compare, swap, lmr, cookie, rmr, flags) = unsafe {
                (
                    a.next(),
                    a.next(),
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                )
            };
            let o = ep(h)?;
            // SAFETY: the consumer's triplets.
            let (l, r) = unsafe { (local_one(lmr, 3)?, remote(rmr, 5)?) };
            ep_body(&o).ep.post_cmp_and_swap(compare, swap, &l, cookie, &r, flags)
        }),
        ib_op::FETCH_AND_ADD => call("dat_ib_post_fetch_and_add", || {
            // SAFETY: add, lmr*, cookie, rmr*, flags (dat_ib_extensions.h).
            let (add, lmr, cookie, rmr, flags) = unsafe {
                (
                    a.next(),
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                )
            };
            let o = ep(h)?;
            // SAFETY: the consumer's triplets.
            let (l, r) = unsafe { (local_one(lmr, 2)?, remote(rmr, 4)?) };
            ep_body(&o).ep.post_fetch_and_add(add, &l, cookie, &r, flags)
        }),
        ib_op::UD_SEND => not_implemented("dat_ib_post_send_ud (UD endpoints)"),
        ib_op::QUERY_COUNTERS => not_implemented("dat_query_counters"),
        ib_op::PRINT_COUNTERS => not_implemented("dat_print_counters"),
        abi::OPEN_EXTENSION_BASE.. if op < abi::CLOSE_EXTENSION_BASE => {
            not_implemented("dat_ib_open_query")
        }
        abi::CLOSE_EXTENSION_BASE.. => not_implemented("dat_ib_close_query"),
        other => not_implemented(&format!("IB extended operation {other}")),
    }
}

/// The single local segment of an atomic operation.
///
/// # Safety
/// `t` must be NULL or point to a readable `DAT_LMR_TRIPLET`.
unsafe fn local_one(
    t: *const abi::LmrTriplet,
    arg: u32,
) -> DatResult<ferrodat_engine::lmr::LmrTriplet> {
    if t.is_null() {
        return Err(DatError::invalid_parameter(arg)
            .with_detail("a NULL local triplet; the old 8 bytes land there"));
    }
    // SAFETY: non-null; the consumer's triplet.
    Ok(triplet(&unsafe { t.read_unaligned() }))
}
