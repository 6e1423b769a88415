//! From engine results to `DAT_RETURN`s, and the small helpers every entry point uses.

use ferrodat_abi::dat::{self as abi, ret, subtype};
use ferrodat_engine::error::{DatError, DatResult};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

/// Set this variable (to anything) to have every failing call print what failed and what to
/// do on stderr; the `DAT_RETURN` alone cannot say it.
pub const TRACE_ENV: &str = "FERRODAT_TRACE";

pub(crate) fn tracing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(TRACE_ENV).is_some())
}

/// The code a consumer gets for `e` (bare QUEUE_EMPTY and TIMEOUT_EXPIRED, see
/// [`DatError::consumer_code`]); traced when [`TRACE_ENV`] is set.
pub(crate) fn code(verb: &str, e: &DatError) -> abi::Return {
    let quiet = matches!(e.return_type(), ret::QUEUE_EMPTY | ret::TIMEOUT_EXPIRED);
    if tracing() && !quiet {
        eprintln!("ferrodat: {verb}: {e}");
    }
    e.consumer_code()
}

/// Runs the body of entry point `verb`: its result as a `DAT_RETURN`. A panic (a bug) is
/// caught here, as unwinding into C is not allowed, and reported as DAT_INTERNAL_ERROR.
pub(crate) fn call(verb: &str, body: impl FnOnce() -> DatResult<()>) -> abi::Return {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => ret::SUCCESS,
        Ok(Err(e)) => code(verb, &e),
        Err(_) => code(
            verb,
            &DatError::internal_error()
                .with_detail("the provider panicked; this is a ferrodat bug, please report it"),
        ),
    }
}

/// `DAT_NOT_IMPLEMENTED` for a call this provider does not offer.
pub(crate) fn not_implemented(verb: &str) -> abi::Return {
    code(
        verb,
        &DatError::not_implemented()
            .with_detail(format!("{verb} is not implemented by ferrodat (yet)")),
    )
}

/// `DAT_MODEL_NOT_SUPPORTED` for an optional DAT 2.0 call this provider does not offer:
/// OFA dapl answers these calls so, and consumers written for it test for that code.
pub(crate) fn model_not_supported(verb: &str) -> abi::Return {
    code(
        verb,
        &DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(format!(
            "{verb} is an optional DAT 2.0 model that ferrodat does not offer (nor does OFA dapl)"
        )),
    )
}

/// Stores `value` through the consumer's output pointer `out`, if it is not NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-null, and the caller promises it is writable.
        unsafe { out.write(value) };
    }
}

/// A required output pointer: DAT_INVALID_PARAMETER naming argument `arg` if NULL.
pub(crate) fn required<T>(out: *mut T, arg: u32, what: &str) -> DatResult<*mut T> {
    if out.is_null() {
        Err(DatError::invalid_parameter(arg)
            .with_detail(format!("{what} is NULL; pass a place for the result")))
    } else {
        Ok(out)
    }
}

/// The consumer's IOV as a slice: `count` entries at `iov`.
///
/// # Safety
/// If `count` > 0, `iov` must point to `count` readable elements that stay valid for `'a`.
pub(crate) unsafe fn slice<'a, T>(
    iov: *const T,
    count: abi::Count,
    arg: u32,
) -> DatResult<&'a [T]> {
    match count {
        0 => Ok(&[]),
        n if n < 0 => Err(DatError::invalid_parameter(arg - 1)
            .with_detail(format!("a negative segment count {n}"))),
        _ if iov.is_null() => Err(DatError::invalid_parameter(arg)
            .with_detail(format!("{count} segments at a NULL IOV pointer"))),
        // SAFETY: non-null and the caller promises `count` readable elements.
        n => Ok(unsafe { std::slice::from_raw_parts(iov, n as usize) }),
    }
}

/// Runs a free that the engine may refuse as "in use" for a moment after the consumer let go
/// of every user: a connection-manager thread that is delivering an endpoint's last event
/// holds the endpoint (and so its EVDs and PZ) until it returns, which can be just after the
/// consumer, woken by that event, freed the endpoint. The callers check first that no live
/// handle uses the object, so an INVALID_STATE that persists past [`SETTLE_TIME`] is real.
pub(crate) fn settle(mut free: impl FnMut() -> DatResult<()>) -> DatResult<()> {
    let deadline = std::time::Instant::now() + SETTLE_TIME;
    loop {
        match free() {
            Err(e)
                if e.return_type() == ret::INVALID_STATE
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

/// How long `settle` lets engine threads finish with a just-freed endpoint.
pub const SETTLE_TIME: std::time::Duration = std::time::Duration::from_secs(1);
