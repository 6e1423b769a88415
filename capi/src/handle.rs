//! Handles. A handle is the address of a small cell holding the provider table pointer —
//! libdat2 dispatches through `*(DAT_PROVIDER **)handle` before any of our code runs — and
//! the object behind it is found in one registry (cell address → object, and engine object
//! id → handle, for events that name endpoints and service points by id).
//!
//! Every call looks its handle up there before touching anything, so a NULL, freed,
//! foreign or wrong-type handle gets `DAT_INVALID_HANDLE` with the caller's subtype. A call
//! holds a clone of the object's `Arc` while it runs, so another thread freeing the handle
//! meanwhile cannot pull the object from under it.
//!
//! A freed handle's cell keeps pointing to the table, so a consumer that uses it again
//! still reaches our validation instead of freed memory; cells are reused only after
//! [`QUARANTINE`] later frees, which bounds the memory they take while keeping a stale
//! handle from aliasing a new object in any realistic window.

use crate::body::Body;
use ferrodat_abi::dat::{self as abi, HandleType, subtype};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::event::ObjectId;
use ferrodat_engine::transient_hold::TRANSIENT_HOLD;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Freed cells wait for this many later frees before a new handle may reuse one.
pub const QUARANTINE: usize = 1 << 16;

/// What a handle points to: the table libdat2 dispatches through.
#[repr(C)]
struct Cell {
    provider: AtomicPtr<abi::Provider>,
}

static FREED_CELLS: Mutex<VecDeque<&'static Cell>> = Mutex::new(VecDeque::new());

/// A cell for a new handle dispatching through `provider`.
fn new_cell(provider: *const abi::Provider) -> &'static Cell {
    let mut freed = FREED_CELLS.lock().unwrap_or_else(|e| e.into_inner());
    let cell = if freed.len() > QUARANTINE {
        freed.pop_front().expect("longer than QUARANTINE")
    } else {
        Box::leak(Box::new(Cell { provider: AtomicPtr::new(std::ptr::null_mut()) }))
    };
    cell.provider.store(provider.cast_mut(), Ordering::Release);
    cell
}

/// Returns the cells of freed handles (they keep their table pointer).
fn retire_cells(addrs: impl IntoIterator<Item = usize>) {
    let mut freed = FREED_CELLS.lock().unwrap_or_else(|e| e.into_inner());
    for a in addrs {
        // SAFETY: every registered address is a leaked, never-freed Cell (new_cell).
        freed.push_back(unsafe { &*(a as *const Cell) });
    }
}

/// A DAT object behind a handle.
pub(crate) struct Object {
    /// The provider table its handle dispatches through (children inherit it).
    provider: *const abi::Provider,
    /// `DAT_HANDLE_TYPE_*`.
    pub kind: HandleType,
    /// The IA handle it belongs to (its own handle for an IA).
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
        Object { provider, kind: body.kind(), ia, context: AtomicU64::new(0), body }
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
    let provider = obj.provider;
    register_at(provider, |_| obj, id)
}

/// Registers the object `make` builds given its own handle (an IA names itself as its
/// owner), dispatching through `provider`.
pub(crate) fn register_at(
    provider: *const abi::Provider,
    make: impl FnOnce(usize) -> Object,
    id: Option<ObjectId>,
) -> (abi::Handle, Arc<Object>) {
    let addr = std::ptr::from_ref(new_cell(provider)) as usize;
    let obj = Arc::new(make(addr));
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
        Some(obj) if obj.kind == kind => Ok(obj.clone()),
        Some(obj) => Err(DatError::invalid_handle(bad).with_detail(format!(
            "handle {h:p} is of type {} where one of type {} was expected",
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
/// only if it succeeds — on an error the consumer keeps a valid handle. Another thread's
/// hold is waited out for up to [`TRANSIENT_HOLD`], then the handle is busy
/// (DAT_INVALID_STATE): the provider's own threads hold an object for microseconds (one
/// that translates an event looks up the endpoint or service point it names), a
/// consumer's concurrent call on the handle as long as that call runs.
pub(crate) fn free(
    h: abi::Handle,
    kind: HandleType,
    bad: abi::ReturnSubtype,
    release: impl FnOnce(&mut Object) -> DatResult<()>,
) -> DatResult<()> {
    let addr = h as usize;
    let deadline = Instant::now() + TRANSIENT_HOLD;
    let removed = loop {
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
            drop(reg);
            if Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            return Err(DatError::invalid_state(busy_subtype(kind)).with_detail(format!(
                "freeing {} handle {h:p} while another thread is in a call on it; free it after \
                 that call returns",
                kind_name(kind)
            )));
        };
        release(obj)?;
        reg.by_id.retain(|_, a| *a != addr);
        break reg.by_addr.remove(&addr);
    };
    retire_cells([addr]);
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
    let taken = addrs.iter().filter_map(|a| reg.by_addr.remove(a)).collect();
    drop(reg);
    retire_cells(addrs);
    taken
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

/// Objects of any type for which `pred` holds.
pub(crate) fn find_any(pred: impl Fn(&Object) -> bool) -> Vec<Arc<Object>> {
    read().by_addr.values().filter(|o| pred(o)).cloned().collect()
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
