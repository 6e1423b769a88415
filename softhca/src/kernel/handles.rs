//! A file's handle table: the `u32` handles commands use to name objects.
//!
//! As in the kernel (one xarray per file, `xa_alloc` from 0), every object type shares one
//! space and the lowest free handle is given out. A handle that names nothing is ENOENT; one
//! that names an object of another type is EINVAL (`rdma_lookup_get_uobject`).

use crate::errno::Errno;
use std::collections::BTreeMap;

/// What a handle names: the object's kind and its device number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Object {
    Pd(u32),
    Mr(u32),
    Mw(u32),
    Cq(u32),
    Qp(u32),
    Srq(u32),
}

/// Object kinds, for lookups. `RwqIndTbl` is never created (softhca has no WQs) but can be
/// asked for by CREATE_QP_EX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pd,
    Mr,
    Mw,
    Cq,
    Qp,
    Srq,
    RwqIndTbl,
}

impl Object {
    fn kind(self) -> Kind {
        match self {
            Object::Pd(_) => Kind::Pd,
            Object::Mr(_) => Kind::Mr,
            Object::Mw(_) => Kind::Mw,
            Object::Cq(_) => Kind::Cq,
            Object::Qp(_) => Kind::Qp,
            Object::Srq(_) => Kind::Srq,
        }
    }

    fn number(self) -> u32 {
        match self {
            Object::Pd(n)
            | Object::Mr(n)
            | Object::Mw(n)
            | Object::Cq(n)
            | Object::Qp(n)
            | Object::Srq(n) => n,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct HandleTable {
    map: BTreeMap<u32, Object>,
}

impl HandleTable {
    /// The handle the next [`insert`](Self::insert) will use: the lowest free one.
    pub fn next_free(&self) -> u32 {
        let mut handle = 0u32;
        for &used in self.map.keys() {
            if used != handle {
                break;
            }
            handle += 1;
        }
        handle
    }

    /// Records `obj` under the lowest free handle.
    pub fn insert(&mut self, obj: Object) -> u32 {
        let handle = self.next_free();
        self.map.insert(handle, obj);
        handle
    }

    /// The device number `handle` names, if it is a `kind`.
    pub fn get(&self, handle: u32, kind: Kind) -> Result<u32, Errno> {
        match self.map.get(&handle) {
            None => Err(Errno::ENOENT),
            Some(obj) if obj.kind() == kind => Ok(obj.number()),
            Some(_) => Err(Errno::EINVAL),
        }
    }

    pub fn remove(&mut self, handle: u32) {
        self.map.remove(&handle);
    }

    /// Every object, handle order.
    pub fn objects(&self) -> impl Iterator<Item = Object> + '_ {
        self.map.values().copied()
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_handle_and_kernel_errnos() {
        let mut t = HandleTable::default();
        assert_eq!(t.insert(Object::Pd(7)), 0);
        assert_eq!(t.insert(Object::Cq(9)), 1);
        assert_eq!(t.insert(Object::Mr(3)), 2);
        t.remove(1);
        assert_eq!(t.insert(Object::Qp(4)), 1);
        assert_eq!(t.get(0, Kind::Pd), Ok(7));
        assert_eq!(t.get(0, Kind::Cq), Err(Errno::EINVAL));
        assert_eq!(t.get(42, Kind::Cq), Err(Errno::ENOENT));
    }
}
