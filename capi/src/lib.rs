//! libferrodat: the DAT 2.0 provider library that OFA `libdat2` loads from `dat.conf`.
//!
//! A dat.conf line such as
//! `ferro-softhca0 u2.0 nonthreadsafe default /abs/libferrodat.so ferrodat.2.0 "softhca0 1 127.0.0.1" ""`
//! (`ferrodat conf` prints one per device) makes libdat2 `dlopen` this library and call
//! [`dat_provider_init`] with the instance data `"device port ip"`. Every DAT call then
//! reaches the engine through the `DAT_PROVIDER` table ([`table`]), with handles validated
//! on the way in ([`handle`]) and engine results turned into `DAT_RETURN`s ([`ret`]).
//! Set `FERRODAT_TRACE=1` to see on stderr what failed and what to do, for every failing call.
//!
//! One module per concern: [`provider`] (registration), [`handle`] and [`body`] (the
//! objects behind handles), [`ia`], [`mem`] (PZ, LMR), [`rmr`], [`evd`] (EVD, CNO,
//! events), [`ep`], [`sp`] (PSP, RSP, CR), [`srq`], [`ext`] (the IB extension operations),
//! [`sockaddr`].

pub mod body;
pub mod ep;
pub mod evd;
pub mod ext;
pub mod handle;
pub mod ia;
pub mod mem;
pub mod provider;
pub mod ret;
pub mod rmr;
pub mod sockaddr;
pub mod sp;
pub mod srq;
pub mod table;

use ferrodat_abi::dat::ProviderInfo;
use std::ffi::c_char;

/// `dat_provider_init`: called by libdat2 after loading the library for a dat.conf entry.
///
/// # Safety
/// libdat2's contract: `info` is its registry key, `instance_data` the entry's ia_params.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dat_provider_init(
    info: *const ProviderInfo,
    instance_data: *const c_char,
) {
    // SAFETY: forwarded from libdat2.
    let r = std::panic::catch_unwind(|| unsafe { provider::init(info, instance_data) });
    if r.is_err() {
        eprintln!("ferrodat: dat_provider_init panicked (a ferrodat bug); nothing registered");
    }
}

/// `dat_provider_fini`: called by libdat2 before unloading the library.
///
/// # Safety
/// libdat2's contract: `info` is the key init registered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dat_provider_fini(info: *const ProviderInfo) {
    // SAFETY: forwarded from libdat2.
    let r = std::panic::catch_unwind(|| unsafe { provider::fini(info) });
    if r.is_err() {
        eprintln!("ferrodat: dat_provider_fini panicked (a ferrodat bug)");
    }
}

/// The marker libdat2 looks for (`dlsym("dapl_extensions")`) to tell a provider with DAT
/// extensions from one without; it is never called. The extensions themselves go through
/// the table's `handle_extendedop_func`.
#[unsafe(no_mangle)]
pub extern "C" fn dapl_extensions() {}

#[cfg(test)]
mod tests;
