//! Memory-key checks: which application memory a key lets the HCA touch.
//!
//! Every local access (a WQE's data segments, a receive buffer) and every remote access
//! (an RDMA or atomic request from a peer) is translated through the registered memory
//! regions of this process, with the checks a ConnectX makes: the key names a live region
//! (index and variant byte), the region belongs to the QP's PD, the range lies inside it,
//! and the region grants the access. A failed check touches no memory.

use super::app_memory::AppSpan;
use super::id_map::IdMap;

/// One registered memory region as the HCA sees it.
#[derive(Clone, Copy, Debug)]
pub struct MemoryRegion {
    /// `index << 8 | variant`; lkey and rkey are equal on mlx5.
    pub key: u32,
    /// The PD it was registered in.
    pub pdn: u32,
    /// The address space the keys address: `iova..iova+length` maps to `memory`.
    pub iova: u64,
    /// The registered application memory.
    pub memory: AppSpan,
    /// `uverbs::access::*` flags.
    pub access: u32,
}

/// Why a key check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// No region has this key.
    UnknownKey,
    /// The region belongs to another PD.
    PdMismatch,
    /// The range is not inside the region.
    OutOfRange,
    /// The region does not grant the access.
    NoPermission,
}

/// The regions of one process, by key index.
#[derive(Default, Debug)]
pub struct MemoryRegions {
    by_index: IdMap<u32, MemoryRegion>,
}

impl MemoryRegions {
    /// Adds a region (REG_MR).
    pub fn insert(&mut self, mr: MemoryRegion) {
        self.by_index.insert(mr.key >> 8, mr);
    }

    /// Removes the region with key index `index` (DEREG_MR).
    pub fn remove(&mut self, index: u32) -> Option<MemoryRegion> {
        self.by_index.remove(&index)
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.by_index.len()
    }

    /// True when no region is registered.
    pub fn is_empty(&self) -> bool {
        self.by_index.is_empty()
    }

    /// Translates `addr..addr+len` under `key` in PD `pdn`, requiring every bit of
    /// `required` access (0 for a local read, which every region allows).
    #[inline]
    pub fn translate(
        &self,
        key: u32,
        pdn: u32,
        addr: u64,
        len: u64,
        required: u32,
    ) -> Result<AppSpan, KeyError> {
        let mr = match self.by_index.get(&(key >> 8)) {
            Some(mr) if mr.key == key => mr,
            _ => return Err(KeyError::UnknownKey),
        };
        if mr.pdn != pdn {
            return Err(KeyError::PdMismatch);
        }
        if mr.access & required != required {
            return Err(KeyError::NoPermission);
        }
        let offset = addr.checked_sub(mr.iova).ok_or(KeyError::OutOfRange)?;
        let end = offset.checked_add(len).ok_or(KeyError::OutOfRange)?;
        if end > mr.memory.len() as u64 {
            return Err(KeyError::OutOfRange);
        }
        mr.memory.sub(offset as usize, len as usize).map_err(|_| KeyError::OutOfRange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodat_abi::uverbs::access;

    fn regions(buf: &mut [u8]) -> MemoryRegions {
        let mut t = MemoryRegions::default();
        // SAFETY: the test keeps `buf` alive while the table is used.
        let memory = unsafe { AppSpan::new(buf.as_mut_ptr() as usize, buf.len()) };
        t.insert(MemoryRegion {
            key: 0x0305,
            pdn: 1,
            iova: 0x1000,
            memory,
            access: access::LOCAL_WRITE | access::REMOTE_READ,
        });
        t
    }

    #[test]
    fn every_check() {
        let mut buf = vec![0u8; 256];
        let t = regions(&mut buf);
        let base = buf.as_ptr() as usize;
        assert_eq!(t.translate(0x0305, 1, 0x1010, 16, 0).unwrap().addr(), base + 0x10);
        assert_eq!(t.translate(0x0306, 1, 0x1000, 1, 0), Err(KeyError::UnknownKey), "variant");
        assert_eq!(t.translate(0x0405, 1, 0x1000, 1, 0), Err(KeyError::UnknownKey), "index");
        assert_eq!(t.translate(0x0305, 2, 0x1000, 1, 0), Err(KeyError::PdMismatch));
        assert_eq!(t.translate(0x0305, 1, 0x0fff, 1, 0), Err(KeyError::OutOfRange), "below");
        assert_eq!(t.translate(0x0305, 1, 0x10f0, 17, 0), Err(KeyError::OutOfRange), "past end");
        assert_eq!(t.translate(0x0305, 1, u64::MAX, 2, 0), Err(KeyError::OutOfRange), "wrap");
        assert!(t.translate(0x0305, 1, 0x10f0, 16, access::REMOTE_READ).is_ok());
        assert_eq!(
            t.translate(0x0305, 1, 0x1000, 8, access::REMOTE_WRITE),
            Err(KeyError::NoPermission)
        );
    }

    #[test]
    fn removed_regions_translate_no_more() {
        let mut buf = vec![0u8; 16];
        let mut t = regions(&mut buf);
        assert!(t.remove(0x04).is_none());
        assert!(t.remove(0x03).is_some());
        assert!(t.is_empty());
        assert_eq!(t.translate(0x0305, 1, 0x1000, 1, 0), Err(KeyError::UnknownKey));
    }
}
