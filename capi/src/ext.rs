//! The IB extension entry (`handle_extendedop_func`, reached through libdat2's
//! `dat_extension_op`): RDMA write with immediate, compare-and-swap and fetch-and-add, with
//! their arguments read from the caller's `va_list`.
//!
//! Every argument of these operations is of integer class and 8 bytes or less (counts,
//! flags, pointers, 64-bit values, the 8-byte cookie union), so one reader that takes the
//! next general-purpose slot serves them all. Stable Rust has no `va_arg`; the slots are
//! read by hand, per the x86_64 SysV and AArch64 AAPCS64 rules (`abi::dat::VaList`), and
//! checked against a real C variadic caller on both (`tests::va_list`, `scripts/test-aarch64`).

use crate::ep::{ep, ep_body, remote, with_iov};
use crate::mem::triplet;
use crate::ret::{call, not_implemented};
use ferrodat_abi::dat::{self as abi, ib_op};
use ferrodat_engine::error::{DatError, DatResult};

/// Reads integer-class variadic arguments, one 8-byte slot each.
pub(crate) struct VarArgs {
    list: abi::VaList,
}

impl VarArgs {
    /// A reader of the `va_list` the consumer's variadic call set up.
    pub(crate) fn new(list: abi::VaList) -> Self {
        VarArgs { list }
    }

    /// The next argument's 64 bits (narrower ones are in the low bits).
    ///
    /// # Safety
    /// The caller must have passed at least one more integer-class argument.
    #[cfg(target_arch = "x86_64")]
    pub(crate) unsafe fn next(&mut self) -> u64 {
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
    pub(crate) unsafe fn next(&mut self) -> u64 {
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

/// The arguments of one of the extension operations this provider implements, as read from
/// the consumer's `va_list`, in the order and with the types of the `dat_ib_post_*` macros of
/// `dat_ib_extensions.h` (`DAT_COUNT`, `DAT_UINT32` and `DAT_COMPLETION_FLAGS` are 32-bit: only
/// the low half of their slot is theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtArgs {
    /// `dat_ib_post_rdma_write_immed(ep, size, lbuf, cookie, rbuf, idata, flgs)`.
    RdmaWriteImmed {
        count: abi::Count,
        lmr: *const abi::LmrTriplet,
        cookie: u64,
        rmr: *const abi::RmrTriplet,
        immediate: u32,
        flags: u32,
    },
    /// `dat_ib_post_cmp_and_swap(ep, cmp_val, swap_val, lbuf, cookie, rbuf, flgs)`.
    CmpAndSwap {
        compare: u64,
        swap: u64,
        lmr: *const abi::LmrTriplet,
        cookie: u64,
        rmr: *const abi::RmrTriplet,
        flags: u32,
    },
    /// `dat_ib_post_fetch_and_add(ep, add_val, lbuf, cookie, rbuf, flgs)`.
    FetchAndAdd {
        add: u64,
        lmr: *const abi::LmrTriplet,
        cookie: u64,
        rmr: *const abi::RmrTriplet,
        flags: u32,
    },
}

impl ExtArgs {
    /// Reads the arguments of `op` from `args`; None (nothing read) for an operation this
    /// provider does not implement.
    ///
    /// # Safety
    /// `args` must be the `va_list` of a call that passed `op`'s arguments.
    pub(crate) unsafe fn read(op: abi::ExtendedOp, args: abi::VaList) -> Option<Self> {
        let mut a = VarArgs::new(args);
        // The tuples are evaluated left to right: their order is the argument order.
        Some(match op {
            // SAFETY: the caller passed count, lmr*, cookie, rmr*, immediate, flags.
            ib_op::RDMA_WRITE_IMMED => unsafe {
                let (count, lmr, cookie, rmr, immediate, flags) = (
                    a.next() as abi::Count,
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                    a.next() as u32,
                );
                ExtArgs::RdmaWriteImmed { count, lmr, cookie, rmr, immediate, flags }
            },
            // SAFETY: the caller passed compare, swap, lmr*, cookie, rmr*, flags.
            ib_op::CMP_AND_SWAP => unsafe {
                let (compare, swap, lmr, cookie, rmr, flags) = (
                    a.next(),
                    a.next(),
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                );
                ExtArgs::CmpAndSwap { compare, swap, lmr, cookie, rmr, flags }
            },
            // SAFETY: the caller passed add, lmr*, cookie, rmr*, flags.
            ib_op::FETCH_AND_ADD => unsafe {
                let (add, lmr, cookie, rmr, flags) = (
                    a.next(),
                    a.next() as *const abi::LmrTriplet,
                    a.next(),
                    a.next() as *const abi::RmrTriplet,
                    a.next() as u32,
                );
                ExtArgs::FetchAndAdd { add, lmr, cookie, rmr, flags }
            },
            _ => return None,
        })
    }

    /// Posts the operation on endpoint `h`.
    fn post(self, h: abi::Handle) -> abi::Return {
        match self {
            ExtArgs::RdmaWriteImmed { count, lmr, cookie, rmr, immediate, flags } => {
                call("dat_ib_post_rdma_write_immed", || {
                    let o = ep(h)?;
                    // An immediate-only write (no segments) may name no remote buffer, as
                    // OFA reads it only for a write with data.
                    let r = if count == 0 && rmr.is_null() {
                        ferrodat_engine::lmr::RmrTriplet {
                            rmr_context: 0,
                            virtual_address: 0,
                            segment_length: 0,
                        }
                    } else {
                        // SAFETY: the consumer's triplet. Argument numbers count as the
                        // dat_ib_post_* macros do: (ep, size, lbuf, cookie, rbuf, ...).
                        unsafe { remote(rmr, 5) }?
                    };
                    let ep = &ep_body(&o).ep;
                    // SAFETY: the consumer's IOV of `count` triplets, read only up to the
                    // limit.
                    unsafe {
                        with_iov(count, lmr, ep.rdma_write_iov_limit(), |l| {
                            ep.post_rdma_write_immed(l, cookie, &r, immediate, flags)
                        })
                    }
                })
            }
            ExtArgs::CmpAndSwap { compare, swap, lmr, cookie, rmr, flags } => {
                call("dat_ib_post_cmp_and_swap", || {
                    let o = ep(h)?;
                    // SAFETY: the consumer's triplets.
                    // (ep, cmp, swap, lbuf, cookie, rbuf, flags)
                    let (l, r) = unsafe { (local_one(lmr, 4)?, remote(rmr, 6)?) };
                    ep_body(&o).ep.post_cmp_and_swap(compare, swap, &l, cookie, &r, flags)
                })
            }
            ExtArgs::FetchAndAdd { add, lmr, cookie, rmr, flags } => {
                call("dat_ib_post_fetch_and_add", || {
                    let o = ep(h)?;
                    // SAFETY: the consumer's triplets.
                    // (ep, add, lbuf, cookie, rbuf, flags)
                    let (l, r) = unsafe { (local_one(lmr, 3)?, remote(rmr, 5)?) };
                    ep_body(&o).ep.post_fetch_and_add(add, &l, cookie, &r, flags)
                })
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
    // SAFETY: libdat2's dat_extension_op passes the consumer's arguments for `op` (the
    // dat_ib_post_* macros of dat_ib_extensions.h).
    if let Some(a) = unsafe { ExtArgs::read(op, args) } {
        return a.post(h);
    }
    match op {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The six integer arguments of a compare-and-swap call after `dat_extension_op`'s
    /// `handle` and `op` took two registers: four come from the register save area, the
    /// last two from the stack, in order.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn integer_arguments_are_read_from_registers_then_the_stack() {
        let mut regs = [0u64; 6 + 16]; // 6 GPRs, then the vector registers (unused)
        regs[0] = 0xdead; // handle: consumed by the named parameters
        regs[1] = 0xbeef; // op
        regs[2..6].copy_from_slice(&[11, 22, 33, 44]);
        let mut stack = [55u64, 66, 0];
        let mut tag = abi::VaListTag {
            gp_offset: 16,
            fp_offset: 48,
            overflow_arg_area: stack.as_mut_ptr().cast(),
            reg_save_area: regs.as_mut_ptr().cast(),
        };
        let mut a = VarArgs { list: &mut tag };
        // SAFETY: six arguments are laid out above.
        let got: Vec<u64> = (0..6).map(|_| unsafe { a.next() }).collect();
        assert_eq!(got, [11, 22, 33, 44, 55, 66]);
        assert_eq!(tag.gp_offset, 48, "every register slot used");
        assert_eq!(tag.overflow_arg_area, stack[2..].as_mut_ptr().cast(), "two stack slots used");
    }

    /// The same on AArch64: registers below `__gr_top` while `__gr_offs` is negative.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn integer_arguments_are_read_from_registers_then_the_stack() {
        let mut regs = [0u64, 0, 11, 22, 33, 44, 77, 88]; // x0..x7 saved; x0, x1 named
        let mut stack = [55u64, 66, 0];
        let list = abi::VaListAarch64 {
            __stack: stack.as_mut_ptr().cast(),
            // SAFETY: one past the end of `regs`.
            __gr_top: unsafe { regs.as_mut_ptr().add(8) }.cast(),
            __vr_top: std::ptr::null_mut(),
            __gr_offs: -(6 * 8),
            __vr_offs: 0,
        };
        let mut a = VarArgs { list };
        // SAFETY: eight arguments are laid out above.
        let got: Vec<u64> = (0..8).map(|_| unsafe { a.next() }).collect();
        assert_eq!(got, [11, 22, 33, 44, 77, 88, 55, 66]);
    }

    #[test]
    fn operations_without_an_implementation_say_so() {
        // SAFETY: these operations read no arguments.
        let r = unsafe { extended_op(std::ptr::null_mut(), ib_op::QUERY_COUNTERS, empty()) };
        assert_eq!(r, abi::ret::CLASS_ERROR | abi::ret::NOT_IMPLEMENTED);
        // SAFETY: as above.
        let r = unsafe { extended_op(std::ptr::null_mut(), abi::OPEN_EXTENSION_BASE, empty()) };
        assert_eq!(r, abi::ret::CLASS_ERROR | abi::ret::NOT_IMPLEMENTED);
    }

    /// A va_list with nothing in it (never read by the operations above).
    #[cfg(target_arch = "x86_64")]
    fn empty() -> abi::VaList {
        Box::leak(Box::new(abi::VaListTag {
            gp_offset: 48,
            fp_offset: 176,
            overflow_arg_area: std::ptr::null_mut(),
            reg_save_area: std::ptr::null_mut(),
        }))
    }

    #[cfg(target_arch = "aarch64")]
    fn empty() -> abi::VaList {
        abi::VaListAarch64 {
            __stack: std::ptr::null_mut(),
            __gr_top: std::ptr::null_mut(),
            __vr_top: std::ptr::null_mut(),
            __gr_offs: 0,
            __vr_offs: 0,
        }
    }
}
