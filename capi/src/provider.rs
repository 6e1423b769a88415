//! Registration with libdat2: `dat_provider_init` builds (or reuses) the provider table for
//! the dat.conf entry it is called for and registers it under libdat2's own `info` pointer
//! (the registry key); `dat_provider_fini` removes it.
//!
//! libdat2 calls fini and `dlclose`s the library when the last IA of an entry closes, and
//! init again when the next one opens. The tables live in memory that is never freed and
//! are reused by name, so a table address stays valid for as long as anything could
//! dispatch through it, and init can run any number of times.

use crate::table;
use ferrodat_abi::dat::{self as abi, ProviderInfo};
use ferrodat_engine::ia::IaSpec;
use std::ffi::{CStr, CString, c_char};
use std::sync::Mutex;

/// One dat.conf entry this library serves.
pub(crate) struct Entry {
    /// The table handed to libdat2 and stored first in every object of this entry.
    pub table: abi::Provider,
    /// The IA name (`table.device_name` points here).
    name: CString,
    /// What init was last told; `None` after fini or a failed init.
    spec: Mutex<Option<IaSpec>>,
}

// SAFETY: the table's pointers are function pointers and `device_name`, which points into
// `name`, owned by the same never-freed Entry; nothing writes the table after creation.
unsafe impl Sync for Entry {}
// SAFETY: as above.
unsafe impl Send for Entry {}

static ENTRIES: Mutex<Vec<&'static Entry>> = Mutex::new(Vec::new());

fn entries() -> std::sync::MutexGuard<'static, Vec<&'static Entry>> {
    ENTRIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The entry called `name` (created on first use).
fn entry(name: &CStr) -> &'static Entry {
    let mut all = entries();
    if let Some(e) = all.iter().find(|e| e.name.as_c_str() == name) {
        return e;
    }
    let e: &'static mut Entry = Box::leak(Box::new(Entry {
        table: table::build(),
        name: name.to_owned(),
        spec: Mutex::new(None),
    }));
    e.table.device_name = e.name.as_ptr();
    all.push(e);
    e
}

/// The table and device spec of an initialised entry called `name`.
pub(crate) fn lookup(name: &CStr) -> Option<(&'static Entry, IaSpec)> {
    let all = entries();
    let e = all.iter().find(|e| e.name.as_c_str() == name)?;
    let spec = e.spec.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
    Some((e, spec))
}

type RegistryFn = unsafe extern "C" fn(*const abi::Provider, *const ProviderInfo) -> abi::Return;

/// libdat2's `dat_registry_add_provider` / `_remove_provider`, looked up in the process
/// (the application linked libdat2, which loaded us): linking against libdat2 would bind us
/// to one copy of it, and the library must also load into programs that never call it.
fn registry_fn(symbol: &CStr) -> Option<RegistryFn> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) };
    // SAFETY: libdat2 defines these symbols with exactly this signature (dat_registry.h).
    (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, RegistryFn>(f) })
}

fn ia_name(info: &ProviderInfo) -> CString {
    // `c_char` is i8 on x86_64 and u8 on aarch64: `to_ne_bytes` takes the byte as it is on both.
    let bytes: Vec<u8> =
        info.ia_name.iter().take_while(|c| **c != 0).map(|c| c.to_ne_bytes()[0]).collect();
    CString::new(bytes).unwrap_or_default()
}

/// `dat_provider_init(info, instance_data)`.
///
/// # Safety
/// `info` must point to libdat2's provider info and `instance_data` be NULL or a C string.
pub(crate) unsafe fn init(info: *const ProviderInfo, instance_data: *const c_char) {
    if info.is_null() {
        eprintln!("ferrodat: dat_provider_init called without provider info; nothing registered");
        return;
    }
    // SAFETY: non-null, and libdat2 passes its registry entry's info.
    let name = ia_name(unsafe { &*info });
    let data = if instance_data.is_null() {
        String::new()
    } else {
        // SAFETY: libdat2 passes the dat.conf ia_params as a C string.
        unsafe { CStr::from_ptr(instance_data) }.to_string_lossy().into_owned()
    };
    let spec = match IaSpec::parse(&data) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ferrodat: dat.conf entry {name:?}: {e}; the entry is not registered");
            return;
        }
    };
    let e = entry(&name);
    *e.spec.lock().unwrap_or_else(|p| p.into_inner()) = Some(spec);
    let Some(add) = registry_fn(c"dat_registry_add_provider") else {
        eprintln!(
            "ferrodat: dat_registry_add_provider is not in this process; load libferrodat through \
             libdat2 (dat.conf), not directly"
        );
        return;
    };
    // SAFETY: the table lives forever at this address; `info` is libdat2's own key.
    let r = unsafe { add(&e.table, info) };
    if r != abi::ret::SUCCESS {
        eprintln!("ferrodat: dat_registry_add_provider({name:?}) returned {r:#x}");
    }
}

/// `dat_provider_fini(info)`.
///
/// # Safety
/// `info` must point to libdat2's provider info.
pub(crate) unsafe fn fini(info: *const ProviderInfo) {
    if info.is_null() {
        return;
    }
    // SAFETY: non-null, libdat2's.
    let name = ia_name(unsafe { &*info });
    let all = entries();
    let Some(e) = all.iter().find(|e| e.name == name).copied() else {
        return;
    };
    drop(all);
    e.spec.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(remove) = registry_fn(c"dat_registry_remove_provider") {
        // SAFETY: the table and key registered by init.
        let r = unsafe { remove(&e.table, info) };
        if r != abi::ret::SUCCESS {
            eprintln!("ferrodat: dat_registry_remove_provider({name:?}) returned {r:#x}");
        }
    }
}
