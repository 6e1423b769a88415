//! Memory regions: memory registered with the device, with its keys.

use crate::dma::DmaBuf;
use crate::error::{Error, Result};
use crate::pd::Pd;
use crate::work_request::Sge;
use ferrodat_abi::uverbs::{self, access, cmd};
use std::marker::PhantomData;
use std::ops::{BitOr, BitOrAssign};
use zerocopy::IntoBytes;

/// Access rights of a memory region (and of a QP's remote access).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access(u32);

impl Access {
    /// Only local reads (the device may read it for sends).
    pub const LOCAL_READ: Access = Access(0);
    /// The device may write it (receives, RDMA READ responses).
    pub const LOCAL_WRITE: Access = Access(access::LOCAL_WRITE);
    /// Peers may RDMA WRITE it (needs LOCAL_WRITE).
    pub const REMOTE_WRITE: Access = Access(access::REMOTE_WRITE);
    /// Peers may RDMA READ it.
    pub const REMOTE_READ: Access = Access(access::REMOTE_READ);
    /// Peers may run atomics on it (needs LOCAL_WRITE).
    pub const REMOTE_ATOMIC: Access = Access(access::REMOTE_ATOMIC);
    /// Memory windows may be bound to it (their remote rights then apply to the part they
    /// cover).
    pub const MW_BIND: Access = Access(access::MW_BIND);
    /// Everything.
    pub const ALL: Access = Access(
        access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC,
    );

    /// Any bit pattern, passed to the device unchanged (it checks them).
    pub const fn from_bits_retain(bits: u32) -> Access {
        Access(bits)
    }

    /// The bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// True if all of `other`'s bits are set.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl BitOrAssign for Access {
    fn bitor_assign(&mut self, rhs: Access) {
        self.0 |= rhs.0;
    }
}

/// A registration (REG_MR) and its DEREG_MR on drop.
#[derive(Debug)]
struct Registration {
    pd: Pd,
    handle: u32,
    lkey: u32,
    rkey: u32,
    addr: u64,
    len: usize,
    access: Access,
}

impl Registration {
    fn new(pd: &Pd, addr: u64, len: usize, acc: Access) -> Result<Registration> {
        if len == 0 {
            return Err(Error::errno("REG_MR", libc::EINVAL)
                .with_detail("zero-length buffer")
                .with_hint("register at least one byte"));
        }
        let req = uverbs::RegMr {
            start: addr,
            length: len as u64,
            hca_va: addr,
            pd_handle: pd.handle(),
            access_flags: acc.bits(),
            ..Default::default()
        };
        let detail = || format!("{len} bytes at {addr:#x}, access {:#x}", acc.bits());
        let r = pd
            .context()
            .run("REG_MR", cmd::REG_MR, req.as_bytes(), &[], size_of::<uverbs::RegMrResp>())
            .map_err(|e| e.with_detail(detail()))?;
        let resp: uverbs::RegMrResp = crate::command::read("REG_MR", &r, 0)?;
        Ok(Registration {
            pd: pd.clone(),
            handle: resp.mr_handle,
            lkey: resp.lkey,
            rkey: resp.rkey,
            addr,
            len,
            access: acc,
        })
    }

    fn check(&self, op: &'static str, offset: usize, n: usize) -> Result<*mut u8> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => Ok((self.addr as usize + offset) as *mut u8),
            _ => Err(Error::invalid(
                op,
                format!(
                    "{n} bytes at offset {offset} pass the end of the {}-byte region",
                    self.len
                ),
            )
            .with_hint("keep offset + length within the registered buffer")),
        }
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let p = self.check("MR read", offset, dst.len())?;
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: inside the registered buffer (checked), which the registration keeps
            // borrowed or owned; volatile because the device may write it.
            *b = unsafe { p.add(i).read_volatile() };
        }
        Ok(())
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        let p = self.check("MR write", offset, src.len())?;
        for (i, b) in src.iter().enumerate() {
            // SAFETY: as in `read`; we hold the exclusive borrow of the buffer.
            unsafe { p.add(i).write_volatile(*b) };
        }
        Ok(())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let req = uverbs::DeregMr { mr_handle: self.handle };
        let what = format_args!("MR lkey {:#x}", self.lkey);
        self.pd.context().run_on_drop("DEREG_MR", cmd::DEREG_MR, req.as_bytes(), 0, what);
    }
}

/// A registered user buffer. It borrows the buffer mutably for as long as it is
/// registered, so the buffer cannot be freed or touched behind the device's back; use
/// [`Mr::read`]/[`Mr::write`] (volatile copies) to access it meanwhile.
#[derive(Debug)]
pub struct Mr<'b> {
    reg: Registration,
    _buf: PhantomData<&'b mut [u8]>,
}

impl Pd {
    /// REG_MR over `buf` (any alignment, at least one byte).
    pub fn reg_mr<'b>(&self, buf: &'b mut [u8], access: Access) -> Result<Mr<'b>> {
        let reg = Registration::new(self, buf.as_mut_ptr() as u64, buf.len(), access)?;
        Ok(Mr { reg, _buf: PhantomData })
    }

    /// REG_MR over memory the borrow checker cannot see (a C consumer's buffer, a DAT
    /// LMR): `len` bytes at `addr`.
    ///
    /// # Safety
    /// The memory must stay mapped, and not be accessed through Rust references while the
    /// device may write it, until the returned region is dropped (deregistered).
    pub unsafe fn reg_mr_raw(&self, addr: *mut u8, len: usize, access: Access) -> Result<MrRaw> {
        Ok(MrRaw { reg: Registration::new(self, addr as u64, len, access)? })
    }

    /// Registers `len` bytes of fresh zeroed page-aligned memory the MR owns.
    pub fn alloc_mr(&self, len: usize, access: Access) -> Result<MrBuf> {
        MrBuf::new(self, DmaBuf::new(len.max(1))?, len, access)
    }

    /// As [`Pd::alloc_mr`], in a memfd mapped shared ([`DmaBuf::new_shared`]): on softhca
    /// a peer's RDMA WRITEs into it are placed directly, one copy instead of two.
    pub fn alloc_mr_shared(&self, len: usize, access: Access) -> Result<MrBuf> {
        MrBuf::new(self, DmaBuf::new_shared(len.max(1))?, len, access)
    }

    /// As [`Pd::alloc_mr`], backed by huge pages where possible (hugetlb, else THP).
    pub fn alloc_mr_huge(&self, len: usize, access: Access) -> Result<MrBuf> {
        MrBuf::new(self, DmaBuf::new_huge(len.max(1))?, len, access)
    }
}

macro_rules! mr_accessors {
    ($t:ty) => {
        impl $t {
            /// Local key (for SGEs).
            pub fn lkey(&self) -> u32 {
                self.reg.lkey
            }
            /// Remote key (for peers' RDMA).
            pub fn rkey(&self) -> u32 {
                self.reg.rkey
            }
            /// Address of the first byte (also the HCA virtual address).
            pub fn addr(&self) -> u64 {
                self.reg.addr
            }
            /// Length in bytes.
            pub fn len(&self) -> usize {
                self.reg.len
            }
            /// Never true (zero-length registrations are refused).
            pub fn is_empty(&self) -> bool {
                self.reg.len == 0
            }
            /// The access rights.
            pub fn access(&self) -> Access {
                self.reg.access
            }
            /// The PD.
            pub fn pd(&self) -> &Pd {
                &self.reg.pd
            }
            /// Volatile copy of `dst.len()` bytes from `offset`; out of bounds is an error.
            pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
                self.reg.read(offset, dst)
            }
            /// Volatile copy of `src` to `offset`; out of bounds is an error.
            pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
                self.reg.write(offset, src)
            }
            /// A scatter/gather entry for `len` bytes at `offset`, borrowing the region
            /// (so it stays registered while a QP may use the entry); out of bounds or
            /// 2 GiB or longer is an error ([`Sge::MAX_LEN`]).
            pub fn sge(&self, offset: usize, len: usize) -> Result<Sge<'_>> {
                let p = self.reg.check("MR sge", offset, len)?;
                let len = u32::try_from(len).ok().filter(|&l| l <= Sge::MAX_LEN).ok_or_else(|| {
                    Error::invalid("MR sge", format!("{len} bytes in one entry"))
                        .with_hint(format!(
                            "one scatter/gather entry carries at most {} bytes (2 GiB - 1: mlx5 \
                             takes a data segment's top length bit for inline data); split the \
                             buffer into several entries",
                            Sge::MAX_LEN
                        ))
                })?;
                Ok(Sge::new(p as u64, len, self.reg.lkey))
            }
        }
    };
}

mr_accessors!(Mr<'_>);
mr_accessors!(MrBuf);
mr_accessors!(MrRaw);

/// A registration over memory the caller vouches for ([`Pd::reg_mr_raw`]).
#[derive(Debug)]
pub struct MrRaw {
    reg: Registration,
}

/// A registered buffer the MR owns (page-aligned, zeroed, `MADV_DONTFORK`).
#[derive(Debug)]
pub struct MrBuf {
    /// Deregistered before `buf` is unmapped (field order).
    reg: Registration,
    buf: DmaBuf,
}

impl MrBuf {
    fn new(pd: &Pd, buf: DmaBuf, len: usize, access: Access) -> Result<MrBuf> {
        let reg = Registration::new(pd, buf.addr(), len, access)?;
        Ok(MrBuf { reg, buf })
    }

    /// How the memory is backed.
    pub fn backing(&self) -> crate::dma::Backing {
        self.buf.backing()
    }
}
