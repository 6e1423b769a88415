//! Handles: every object handed to a consumer is an `Object` in an `Arc`, whose address is
//! the handle. Its first word is the provider table (libdat2 dispatches through
//! `*(DAT_PROVIDER **)handle`), then a magic number and the DAT handle type.
//!
//! Live handles are kept in one registry (address → object, and engine object id → handle,
//! for events that name endpoints and service points by id). Every call looks its handle up
//! there before touching it, so a NULL, freed, foreign or wrong-type handle gets
//! `DAT_INVALID_HANDLE` with the caller's subtype instead of a dereference. A call holds a
//! clone of the `Arc` while it runs, so another thread freeing the handle meanwhile cannot
//! pull the object from under it.

use crate::body::Body;
use ferrodat_abi::dat::{self as abi, HandleType, subtype};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::event::ObjectId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Tells our objects from anything else that happens to start with our table's address.
const MAGIC: u64 = 0x6665_7272_6f64_6174; // "ferrodat"

/// A DAT object as the consumer holds it. `repr(C)` so that `provider` is the first word.
#[repr(C)]
pub(crate) struct Object {
    /// The provider table this object dispatches through (`DAT_HANDLE_TO_PROVIDER`).
    provider: *const abi::Provider,
    magic: u64,
    /// `DAT_HANDLE_TYPE_*`.
    pub kind: HandleType,
    /// The IA handle it belongs to (its own address for an IA).
    pub ia: usize,
    /// `dat_set_consumer_context`'s value.
    context: AtomicU64,
    /// What it is.
    pub body: Body,
}

// SAFETY: `provider` points to a table that is written once, before any object refers to it,
// and never freed (see `crate::provider`); everything else in an Object is Send + Sync or
// guarded by the body's own locks.
unsafe impl Send for Object {}
// SAFETY: as above.
unsafe impl Sync for Object {}

impl Object {
    /// A new object for the consumer, not yet registered.
    pub fn new(provider: *const abi::Provider, ia: usize, body: Body) -> Object {
        Object { provider, magic: MAGIC, kind: body.kind(), ia, context: AtomicU64::new(0), body }
    }

    /// The provider table it dispatches through.
    pub fn provider(&self) -> *const abi::Provider {
        self.provider
    }

    /// `dat_get_consumer_context`.
    pub fn context(&self) -> u64 {
        self.context.load(Ordering::Relaxed)
    }

    /// `dat_set_consumer_context`.
    pub fn set_context(&self, value: u64) {
        self.context.store(value, Ordering::Relaxed);
    }
}

/// Hashes handle addresses and object ids: both are already well spread, so a multiply is
/// enough (SipHash would cost more than the rest of a post).
#[derive(Default)]
pub(crate) struct SpreadHasher(u64);

impl Hasher for SpreadHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ n >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type Spread = BuildHasherDefault<SpreadHasher>;

/// Every live handle.
#[derive(Default)]
pub(crate) struct Registry {
    by_addr: HashMap<usize, Arc<Object>, Spread>,
    by_id: HashMap<ObjectId, usize, Spread>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(Default::default);

fn read() -> RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|e| e.into_inner())
}

/// Registers `obj` (under the engine id `id`, if events name it) and returns its handle.
pub(crate) fn register(obj: Object, id: Option<ObjectId>) -> (abi::Handle, Arc<Object>) {
    register_at(|_| obj, id)
}

/// Registers the object `make` builds given its own future handle (an IA names itself as
/// its owner).
pub(crate) fn register_at(
    make: impl FnOnce(usize) -> Object,
    id: Option<ObjectId>,
) -> (abi::Handle, Arc<Object>) {
    let obj = Arc::new_cyclic(|me| make(me.as_ptr() as usize));
    let addr = Arc::as_ptr(&obj) as usize;
    let mut reg = write();
    reg.by_addr.insert(addr, obj.clone());
    if let Some(id) = id {
        reg.by_id.insert(id, addr);
    }
    (addr as abi::Handle, obj)
}

/// The object behind `h` if it is a live handle of type `kind`; otherwise
/// `DAT_INVALID_HANDLE` with subtype `bad`.
pub(crate) fn get(
    h: abi::Handle,
    kind: HandleType,
    bad: abi::ReturnSubtype,
) -> DatResult<Arc<Object>> {
    let reg = read();
    match reg.by_addr.get(&(h as usize)) {
        Some(obj) if obj.kind == kind && obj.magic == MAGIC => Ok(obj.clone()),
        Some(obj) => Err(DatError::invalid_handle(bad).with_detail(format!(
            "handle {h:p} is a {} handle where a {} handle was expected",
            kind_name(obj.kind),
            kind_name(kind)
        ))),
        None if h.is_null() => Err(DatError::invalid_handle(bad)
            .with_detail(format!("a NULL handle where a {} handle was expected", kind_name(kind)))),
        None => Err(DatError::invalid_handle(bad).with_detail(format!(
            "handle {h:p} is not a live ferrodat {} handle (freed, or never handed out)",
            kind_name(kind)
        ))),
    }
}

/// The object behind `h` whatever its type (consumer context, handle type calls).
pub(crate) fn get_any(h: abi::Handle) -> DatResult<Arc<Object>> {
    read().by_addr.get(&(h as usize)).cloned().ok_or_else(|| {
        DatError::invalid_handle(subtype::NO_SUBTYPE)
            .with_detail(format!("handle {h:p} is not a live ferrodat handle"))
    })
}

/// The handle registered for engine object `id` (an EP, EVD, PSP or RSP named by an event),
/// or NULL if it was freed.
pub(crate) fn handle_of_id(id: ObjectId) -> abi::Handle {
    read().by_id.get(&id).copied().unwrap_or(0) as abi::Handle
}

/// The object registered for engine object `id`.
pub(crate) fn object_of_id(id: ObjectId) -> Option<Arc<Object>> {
    let reg = read();
    reg.by_id.get(&id).and_then(|a| reg.by_addr.get(a)).cloned()
}

/// Frees handle `h` of type `kind`: `release` runs on the object with no other reference
/// to it in existence (no call in progress on it, none can start), and the handle is gone
/// only if it succeeds — on an error the consumer keeps a valid handle.
pub(crate) fn free(
    h: abi::Handle,
    kind: HandleType,
    bad: abi::ReturnSubtype,
    release: impl FnOnce(&mut Object) -> DatResult<()>,
) -> DatResult<()> {
    let addr = h as usize;
    let removed = {
        let mut reg = write();
        let Some(entry) = reg.by_addr.get_mut(&addr) else {
            drop(reg);
            return get(h, kind, bad).map(drop);
        };
        if entry.kind != kind {
            drop(reg);
            return get(h, kind, bad).map(drop);
        }
        let Some(obj) = Arc::get_mut(entry) else {
            return Err(DatError::invalid_state(busy_subtype(kind)).with_detail(format!(
                "freeing {} handle {h:p} while another thread is in a call on it; free it after \
                 that call returns",
                kind_name(kind)
            )));
        };
        release(obj)?;
        reg.by_id.retain(|_, a| *a != addr);
        reg.by_addr.remove(&addr)
    };
    // Dropped outside the registry lock: destroying a QP or joining a thread takes time.
    drop(removed);
    Ok(())
}

/// Removes every handle of IA `ia` (and the IA itself) without asking: `dat_ia_close`
/// with the abrupt flag. Returns them so the caller can tear them down in order.
pub(crate) fn take_all_of_ia(ia: usize) -> Vec<Arc<Object>> {
    let mut reg = write();
    let addrs: Vec<usize> =
        reg.by_addr.iter().filter(|(_, o)| o.ia == ia).map(|(a, _)| *a).collect();
    reg.by_id.retain(|_, a| !addrs.contains(a));
    addrs.iter().filter_map(|a| reg.by_addr.remove(a)).collect()
}

/// The live handles of IA `ia` other than the IA itself, with their types.
pub(crate) fn children_of_ia(ia: usize) -> Vec<(usize, HandleType)> {
    read()
        .by_addr
        .iter()
        .filter(|(a, o)| o.ia == ia && **a != ia)
        .map(|(a, o)| (*a, o.kind))
        .collect()
}

/// Objects of type `kind` for which `pred` holds.
pub(crate) fn find(kind: HandleType, pred: impl Fn(&Object) -> bool) -> Vec<Arc<Object>> {
    read().by_addr.values().filter(|o| o.kind == kind && pred(o)).cloned().collect()
}

fn busy_subtype(kind: HandleType) -> abi::ReturnSubtype {
    use ferrodat_abi::dat::handle_type as t;
    match kind {
        t::EVD => subtype::INVALID_STATE_EVD_IN_USE,
        t::CNO => subtype::INVALID_STATE_CNO_IN_USE,
        t::IA => subtype::INVALID_STATE_IA_IN_USE,
        _ => subtype::NO_SUBTYPE,
    }
}

/// The DAT name of a handle type, for messages.
pub(crate) fn kind_name(kind: HandleType) -> &'static str {
    use ferrodat_abi::dat::handle_type as t;
    match kind {
        t::CR => "CR",
        t::EP => "EP",
        t::EVD => "EVD",
        t::IA => "IA",
        t::LMR => "LMR",
        t::PSP => "PSP",
        t::PZ => "PZ",
        t::RMR => "RMR",
        t::RSP => "RSP",
        t::CNO => "CNO",
        t::SRQ => "SRQ",
        t::CSP => "CSP",
        _ => "unknown",
    }
}
