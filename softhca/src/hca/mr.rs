//! Memory-key checks: which application memory a key lets the HCA touch.
//!
//! Every local access (a WQE's data segments, a receive buffer) and every remote access
//! (an RDMA or atomic request from a peer) is translated through the registered memory
//! regions of this process, with the checks a ConnectX makes: the key names a live region
//! (index and variant byte), the region belongs to the QP's PD, the range lies inside it,
//! and the region grants the access. A failed check touches no memory.
//!
//! Memory windows (type 1) share the key space. A window starts free; a bind WQE
//! ([`MemoryRegions::bind_window`]) gives it a new variant byte, a range inside a region of
//! its PD that allows MW_BIND, and its own remote rights, or (length 0) frees it again. A
//! remote request under a window's key is checked against the window's range and rights,
//! then translated through the region as the KLM the bind wrote points to it: a region
//! deregistered under a bound window leaves the window granting nothing. Windows serve
//! remote requests only ([`MemoryRegions::translate_remote`]); local keys must be regions.

use super::app_memory::AppSpan;
use super::id_map::IdMap;
use ferrodat_abi::uverbs::access;

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

/// What a bind WQE asks of a window (decoded from its UMR segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowBind {
    /// The window's key as the WQE names it (control segment `imm`); its index selects the
    /// window.
    pub window_key: u32,
    /// The new variant byte.
    pub variant: u8,
    /// `None`: unbind (free). Else the range and rights.
    pub range: Option<BoundRange>,
}

/// The range a bound window covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundRange {
    /// First address (the window is not zero-based: remote addresses are these).
    pub addr: u64,
    /// Bytes (> 0, at most 2 GiB).
    pub len: u64,
    /// `uverbs::access` remote rights the window grants.
    pub access: u32,
    /// Key of the region the range lies in (the KLM's mkey).
    pub region_key: u32,
}

/// Why a bind failed (all reported as `MW_BIND_ERR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// No window has the WQE's key index.
    NoSuchWindow,
    /// The window belongs to another PD than the QP.
    WindowPdMismatch,
    /// No region has the KLM's key.
    NoSuchRegion,
    /// The region belongs to another PD.
    RegionPdMismatch,
    /// The region was not registered with MW_BIND.
    RegionNotBindable,
    /// The range is not inside the region.
    OutOfRange,
    /// Remote write or atomic rights on a region without local write.
    RightsExceedRegion,
}

/// One window as the HCA sees it.
#[derive(Clone, Copy, Debug)]
struct MemoryWindow {
    key: u32,
    pdn: u32,
    bound: Option<BoundRange>,
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
    windows: IdMap<u32, MemoryWindow>,
}

impl MemoryRegions {
    /// Adds a region (REG_MR).
    pub fn insert(&mut self, mr: MemoryRegion) {
        self.by_index.insert(mr.key >> 8, mr);
    }

    /// Removes the region or window with key index `index` (DEREG_MR, DEALLOC_MW); the
    /// region, if it was one.
    pub fn remove(&mut self, index: u32) -> Option<MemoryRegion> {
        self.windows.remove(&index);
        self.by_index.remove(&index)
    }

    /// Adds a free window (ALLOC_MW) with key `key` in PD `pdn`.
    pub fn insert_window(&mut self, key: u32, pdn: u32) {
        self.windows.insert(key >> 8, MemoryWindow { key, pdn, bound: None });
    }

    /// The current key of the window with index `index` and its range, if bound.
    pub fn window(&self, index: u32) -> Option<(u32, Option<BoundRange>)> {
        self.windows.get(&index).map(|w| (w.key, w.bound))
    }

    /// Executes a bind WQE of a QP in PD `pdn`: the checks a ConnectX makes (the window
    /// and the region in the QP's PD, the region bindable and covering the range, remote
    /// write or atomic only over locally writable memory), then the window takes the new
    /// variant and range. On failure the window is unchanged.
    pub fn bind_window(&mut self, pdn: u32, bind: &WindowBind) -> Result<(), BindError> {
        let window = self.windows.get(&(bind.window_key >> 8)).ok_or(BindError::NoSuchWindow)?;
        if window.pdn != pdn {
            return Err(BindError::WindowPdMismatch);
        }
        if let Some(range) = bind.range {
            let region = match self.by_index.get(&(range.region_key >> 8)) {
                Some(mr) if mr.key == range.region_key => mr,
                _ => return Err(BindError::NoSuchRegion),
            };
            if region.pdn != pdn {
                return Err(BindError::RegionPdMismatch);
            }
            if region.access & access::MW_BIND == 0 {
                return Err(BindError::RegionNotBindable);
            }
            let inside =
                range.addr.checked_sub(region.iova).and_then(|off| off.checked_add(range.len));
            if inside.is_none_or(|end| end > region.memory.len() as u64) {
                return Err(BindError::OutOfRange);
            }
            let needs_local_write = access::REMOTE_WRITE | access::REMOTE_ATOMIC;
            if range.access & needs_local_write != 0 && region.access & access::LOCAL_WRITE == 0 {
                return Err(BindError::RightsExceedRegion);
            }
        }
        let window = self.windows.get_mut(&(bind.window_key >> 8)).expect("looked up above");
        window.key = window.key & !0xff | u32::from(bind.variant);
        window.bound = bind.range;
        Ok(())
    }

    /// As [`Self::translate`] for a remote request (RDMA WRITE/READ, atomic), whose key may
    /// also be a window's: then the window must be bound, in PD `pdn`, cover the range and
    /// grant `required`, and its region must still be there.
    #[inline]
    pub fn translate_remote(
        &self,
        key: u32,
        pdn: u32,
        addr: u64,
        len: u64,
        required: u32,
    ) -> Result<AppSpan, KeyError> {
        let Some(window) = self.windows.get(&(key >> 8)) else {
            return self.translate(key, pdn, addr, len, required);
        };
        if window.key != key {
            return Err(KeyError::UnknownKey);
        }
        let Some(range) = window.bound else { return Err(KeyError::UnknownKey) };
        if window.pdn != pdn {
            return Err(KeyError::PdMismatch);
        }
        if range.access & required != required {
            return Err(KeyError::NoPermission);
        }
        let offset = addr.checked_sub(range.addr).ok_or(KeyError::OutOfRange)?;
        if offset.checked_add(len).is_none_or(|end| end > range.len) {
            return Err(KeyError::OutOfRange);
        }
        // The KLM: the same addresses under the region's key, no rights needed of it.
        self.translate(range.region_key, pdn, addr, len, 0)
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
    #[inline(always)]
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

    fn bindable(buf: &mut [u8], access: u32) -> MemoryRegions {
        let mut t = MemoryRegions::default();
        // SAFETY: the test keeps `buf` alive while the table is used.
        let memory = unsafe { AppSpan::new(buf.as_mut_ptr() as usize, buf.len()) };
        t.insert(MemoryRegion { key: 0x0305, pdn: 1, iova: 0x1000, memory, access });
        t.insert_window(0x0900, 1);
        t
    }

    fn bind(variant: u8, addr: u64, len: u64, access: u32) -> WindowBind {
        let range = BoundRange { addr, len, access, region_key: 0x0305 };
        WindowBind { window_key: 0x0900, variant, range: Some(range) }
    }

    #[test]
    fn a_bound_window_grants_its_range_and_rights_only() {
        let mut buf = vec![0u8; 256];
        let base = buf.as_ptr() as usize;
        let all = access::LOCAL_WRITE | access::MW_BIND;
        let mut t = bindable(&mut buf, all);
        let rw = access::REMOTE_READ | access::REMOTE_WRITE;
        assert_eq!(
            t.translate_remote(0x0900, 1, 0x1000, 1, 0),
            Err(KeyError::UnknownKey),
            "a free window grants nothing"
        );
        t.bind_window(1, &bind(0x01, 0x1010, 0x20, rw)).unwrap();
        assert_eq!(
            t.window(0x09),
            Some((
                0x0901,
                Some(BoundRange { addr: 0x1010, len: 0x20, access: rw, region_key: 0x0305 })
            ))
        );
        let span = t.translate_remote(0x0901, 1, 0x1018, 8, access::REMOTE_WRITE).unwrap();
        assert_eq!(span.addr(), base + 0x18, "through the region, same addresses");
        assert_eq!(
            t.translate_remote(0x0900, 1, 0x1018, 8, 0),
            Err(KeyError::UnknownKey),
            "old key"
        );
        assert_eq!(t.translate_remote(0x0901, 2, 0x1018, 8, 0), Err(KeyError::PdMismatch));
        assert_eq!(t.translate_remote(0x0901, 1, 0x100f, 1, 0), Err(KeyError::OutOfRange));
        assert_eq!(t.translate_remote(0x0901, 1, 0x1028, 9, 0), Err(KeyError::OutOfRange));
        assert_eq!(
            t.translate_remote(0x0901, 1, 0x1010, 8, access::REMOTE_ATOMIC),
            Err(KeyError::NoPermission)
        );
        assert_eq!(t.translate(0x0901, 1, 0x1010, 8, 0), Err(KeyError::UnknownKey), "not a lkey");
        // Regions still translate remotely under their own rights.
        assert_eq!(
            t.translate_remote(0x0305, 1, 0x1000, 8, access::REMOTE_READ),
            Err(KeyError::NoPermission)
        );
        // Unbind: a new key, and nothing granted.
        t.bind_window(1, &WindowBind { window_key: 0x0901, variant: 0x02, range: None }).unwrap();
        assert_eq!(t.window(0x09), Some((0x0902, None)));
        assert_eq!(t.translate_remote(0x0902, 1, 0x1018, 8, 0), Err(KeyError::UnknownKey));
        // Bound again, then the region goes: the window's KLM points nowhere.
        t.bind_window(1, &bind(0x03, 0x1000, 0x100, rw)).unwrap();
        t.remove(0x03);
        assert_eq!(t.translate_remote(0x0903, 1, 0x1000, 8, 0), Err(KeyError::UnknownKey));
        t.remove(0x09);
        assert_eq!(t.window(0x09), None);
    }

    #[test]
    fn binds_are_checked_as_the_hca_checks_them() {
        let mut buf = vec![0u8; 256];
        let mut t = bindable(&mut buf, access::MW_BIND);
        let read = access::REMOTE_READ;
        let wrong_window = WindowBind { window_key: 0x0a00, ..bind(1, 0x1000, 8, read) };
        assert_eq!(t.bind_window(1, &wrong_window), Err(BindError::NoSuchWindow));
        assert_eq!(t.bind_window(2, &bind(1, 0x1000, 8, read)), Err(BindError::WindowPdMismatch));
        let mut other_region = bind(1, 0x1000, 8, read);
        other_region.range.as_mut().unwrap().region_key = 0x0306;
        assert_eq!(t.bind_window(1, &other_region), Err(BindError::NoSuchRegion));
        assert_eq!(t.bind_window(1, &bind(1, 0x0fff, 8, read)), Err(BindError::OutOfRange));
        assert_eq!(t.bind_window(1, &bind(1, 0x10f9, 8, read)), Err(BindError::OutOfRange));
        assert_eq!(
            t.bind_window(1, &bind(1, 0x1000, 8, access::REMOTE_WRITE)),
            Err(BindError::RightsExceedRegion),
            "remote write needs a locally writable region"
        );
        assert_eq!(t.window(0x09), Some((0x0900, None)), "failed binds change nothing");
        assert!(t.bind_window(1, &bind(1, 0x10f8, 8, read)).is_ok());
        let mut plain = vec![0u8; 64];
        let mut t = bindable(&mut plain, access::LOCAL_WRITE);
        assert_eq!(t.bind_window(1, &bind(1, 0x1000, 8, read)), Err(BindError::RegionNotBindable));
        // SAFETY: `plain` outlives the table.
        let memory = unsafe { AppSpan::new(plain.as_mut_ptr() as usize, 64) };
        t.insert(MemoryRegion {
            key: 0x0705,
            pdn: 2,
            iova: 0x1000,
            memory,
            access: access::MW_BIND,
        });
        let mut foreign = bind(1, 0x1000, 8, read);
        foreign.range.as_mut().unwrap().region_key = 0x0705;
        assert_eq!(t.bind_window(1, &foreign), Err(BindError::RegionPdMismatch));
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
