//! One command's buffers, split as `ib_uverbs_write` splits them: the core request and
//! response ("ucore") and the driver's ("udata"), with the kernel's copy rules
//! (`uverbs_request`, `uverbs_response`, `ib_copy_from_udata`, `ib_copy_to_udata`,
//! `ib_is_udata_cleared`).

use crate::errno::Errno;
use crate::user_memory;
use std::borrow::Cow;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A user output buffer; address 0 is the kernel's NULL (any non-empty copy to it: EFAULT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserBuf {
    pub addr: u64,
    pub len: usize,
}

/// The parts of one `write()`.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// Core request bytes (`ucore.inbuf`, `inlen`).
    pub core_in: Cow<'a, [u8]>,
    /// Core response buffer (`ucore.outbuf`, `outlen`).
    pub core_out: UserBuf,
    /// Driver request bytes (`udata.inbuf`, `inlen`).
    pub driver_in: &'a [u8],
    /// User address of `driver_in` (0 when it is empty, as the kernel passes NULL).
    pub driver_in_addr: u64,
    /// Driver response buffer (`udata.outbuf`, `outlen`).
    pub driver_out: UserBuf,
}

/// `ib_is_buffer_cleared` gives up (answers "not cleared") beyond this length.
const MAX_CLEARED_CHECK: usize = u16::MAX as usize;

impl Call<'_> {
    /// `uverbs_request`: the core request as `T`, zero-extended if shorter; bytes beyond
    /// `T` must be zero (EOPNOTSUPP: a newer ABI this kernel does not know).
    pub fn request<T: FromBytes + IntoBytes + KnownLayout + Immutable>(&self) -> Result<T, Errno> {
        read_extended::<T>(&self.core_in, Errno::EOPNOTSUPP)
    }

    /// `uverbs_response`: copies as much of `resp` as fits in the core response buffer and
    /// zero-fills the rest of it (EFAULT if the buffer is bad).
    pub fn respond(&self, resp: &[u8]) -> Result<(), Errno> {
        let n = resp.len().min(self.core_out.len);
        // SAFETY: response buffers are memory the caller lent for the response (the
        // `Uverbs::write` contract); bad addresses give EFAULT.
        unsafe { user_memory::copy_to_user(self.core_out.addr, &resp[..n])? };
        if self.core_out.len > resp.len() {
            let zeros = vec![0u8; self.core_out.len - resp.len()];
            let at = self.core_out.addr.wrapping_add(resp.len() as u64);
            // SAFETY: as above: the tail of the same lent response buffer.
            unsafe { user_memory::copy_to_user(at, &zeros)? };
        }
        Ok(())
    }

    /// `uverbs_response_length`: how many bytes of a `full`-byte response get written.
    pub fn response_length(&self, full: usize) -> u32 {
        self.core_out.len.min(full) as u32
    }

    /// `ib_copy_from_udata(len)`: `len` bytes of driver data. Like the kernel this reads
    /// past what the caller declared (from the memory after its buffer) when `len` exceeds
    /// it, and faults on NULL when there was no driver data at all.
    pub fn driver_read(&self, len: usize) -> Result<Vec<u8>, Errno> {
        if len <= self.driver_in.len() {
            return Ok(self.driver_in[..len].to_vec());
        }
        let mut v = vec![0u8; len];
        user_memory::copy_from_user(self.driver_in_addr, &mut v)?;
        Ok(v)
    }

    /// `ib_copy_to_udata`: writes `bytes` to the driver response buffer, whatever its
    /// declared length (EFAULT when there is none: the kernel's NULL).
    pub fn driver_write(&self, bytes: &[u8]) -> Result<(), Errno> {
        // SAFETY: the driver response buffer is memory the caller lent for the response
        // (the `Uverbs::write` contract); bad addresses give EFAULT.
        unsafe { user_memory::copy_to_user(self.driver_out.addr, bytes) }
    }

    /// `ib_is_udata_cleared(offset, inlen - offset)`: the driver data from `offset` on is
    /// all zero.
    pub fn driver_cleared_from(&self, offset: usize) -> bool {
        let tail = self.driver_in.get(offset..).unwrap_or(&[]);
        tail.len() <= MAX_CLEARED_CHECK && tail.iter().all(|&b| b == 0)
    }
}

/// `T` from the start of `bytes`, zero-extended; a longer `bytes` must have a zero tail,
/// else `tail_err`.
pub(crate) fn read_extended<T: FromBytes + IntoBytes + KnownLayout + Immutable>(
    bytes: &[u8],
    tail_err: Errno,
) -> Result<T, Errno> {
    let size = size_of::<T>();
    let mut value = T::new_zeroed();
    let n = bytes.len().min(size);
    value.as_mut_bytes()[..n].copy_from_slice(&bytes[..n]);
    let tail = &bytes[n..];
    if !tail.is_empty() && (tail.len() > MAX_CLEARED_CHECK || tail.iter().any(|&b| b != 0)) {
        return Err(tail_err);
    }
    Ok(value)
}
