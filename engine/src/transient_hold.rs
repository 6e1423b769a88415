//! A free that counts an object's other holders waits out momentary ones first.
//!
//! Engine threads hold objects for microseconds: the CM thread delivering an endpoint's
//! last event, a CNO waiter scanning its EVDs, a thread translating a completion. Through
//! an endpoint such a hold also keeps its PZ, EVDs, SRQ and IA. A consumer that freed every
//! user of an object and then frees the object must not find it "in use" because of them,
//! so the free gives such holds [`TRANSIENT_HOLD`] to end. A real user (an endpoint the
//! consumer still has) holds on past it and the free is refused as before.

use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a free waits for momentary holds to end (the C library's handle frees too).
pub const TRANSIENT_HOLD: Duration = Duration::from_millis(20);

/// How many holders of `shared` besides the caller remain once momentary holds had up to
/// [`TRANSIENT_HOLD`] to end (0 at once when there are none).
pub(crate) fn other_holders<T: ?Sized>(shared: &Arc<T>) -> usize {
    let deadline = Instant::now() + TRANSIENT_HOLD;
    loop {
        let others = Arc::strong_count(shared) - 1;
        if others == 0 || Instant::now() >= deadline {
            return others;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}
