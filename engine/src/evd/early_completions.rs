//! Completions of a passive endpoint that arrive before its consumer was told ESTABLISHED.
//!
//! After `dat_cr_accept` the passive QP is ready to receive, but the connection exists for
//! the consumer only once ESTABLISHED is reported, when the active side's ready-to-use
//! message reaches our CM. The active side may send the moment it reports ESTABLISHED, so
//! its first message often completes here first. Such completions are parked on the
//! endpoint (never dropped) and handed out right after the connection event: by the next
//! harvest of the CQ they came from, ahead of any later completion of that CQ, so the
//! stream's order is kept.
//!
//! States: `Open` (the usual: deliver at once; one atomic load on the harvest path),
//! `Closed` (between accept and the connection's outcome: park), `Released` (the outcome
//! was reported: the next harvest delivers what is parked, then the gate is open again).
//!
//! The hand-off between the CM thread (close, release) and the harvester (admit, deliver)
//! is model-checked in `loom-tests/tests/early_completions.rs`.

use crate::event::Event;
use crate::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

/// The parking place of one endpoint's early completions.
#[derive(Debug)]
pub struct EarlyCompletions {
    /// Fast path: completions pass straight through.
    open: AtomicBool,
    parked: Mutex<Parked>,
}

#[derive(Debug)]
struct Parked {
    gate: Gate,
    events: std::collections::VecDeque<Event>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    Open,
    Closed,
    Released,
}

impl Default for EarlyCompletions {
    fn default() -> Self {
        EarlyCompletions {
            open: AtomicBool::new(true),
            parked: Mutex::new(Parked { gate: Gate::Open, events: Default::default() }),
        }
    }
}

/// What [`EarlyCompletions::admit`] did with a completion.
#[derive(Debug, PartialEq, Eq)]
pub enum Admitted {
    /// Delivered (after whatever was parked before it): this many events went to the sink.
    Delivered(usize),
    /// Parked until the connection's outcome is reported.
    Parked,
}

impl EarlyCompletions {
    /// Completions park from now on (before the QP can receive for a connection whose
    /// ESTABLISHED is not reported yet).
    pub fn close(&self) {
        let mut p = self.lock();
        p.gate = Gate::Closed;
        self.open.store(false, Ordering::Release);
    }

    /// The connection's outcome has been reported: what is parked may follow it. Returns
    /// whether anything waits to be delivered (the caller then tells the CQ's harvester).
    pub fn release(&self) -> bool {
        let mut p = self.lock();
        if p.gate != Gate::Closed {
            return false;
        }
        if p.events.is_empty() {
            p.gate = Gate::Open;
            self.open.store(true, Ordering::Release);
            false
        } else {
            p.gate = Gate::Released;
            true
        }
    }

    /// Whether completions pass straight through (the harvest path's check).
    #[inline]
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// A completion the harvester found while the gate was not known to be open: parked,
    /// or delivered after the parked ones (at most `room` events go to `sink`; what does
    /// not fit stays parked, in order, and `Delivered` counts what went).
    pub fn admit(&self, event: Event, room: usize, sink: &mut dyn FnMut(Event)) -> Admitted {
        let mut p = self.lock();
        match p.gate {
            Gate::Closed => {
                p.events.push_back(event);
                Admitted::Parked
            }
            Gate::Open if room > 0 => {
                sink(event);
                Admitted::Delivered(1)
            }
            Gate::Open | Gate::Released => {
                p.events.push_back(event);
                if p.gate == Gate::Open {
                    // No room at all: keep it, in order, for the next harvest.
                    p.gate = Gate::Released;
                    self.open.store(false, Ordering::Release);
                }
                Admitted::Delivered(self.drain(&mut p, room, sink))
            }
        }
    }

    /// Delivers up to `room` released completions; true when some are still parked.
    pub fn deliver_released(&self, room: usize, sink: &mut dyn FnMut(Event)) -> (usize, bool) {
        let mut p = self.lock();
        if p.gate != Gate::Released {
            return (0, false);
        }
        let n = self.drain(&mut p, room, sink);
        (n, p.gate == Gate::Released)
    }

    fn drain(&self, p: &mut Parked, room: usize, sink: &mut dyn FnMut(Event)) -> usize {
        let mut n = 0;
        while n < room {
            let Some(ev) = p.events.pop_front() else { break };
            sink(ev);
            n += 1;
        }
        if p.events.is_empty() {
            p.gate = Gate::Open;
            self.open.store(true, Ordering::Release);
        }
        n
    }

    fn lock(&self) -> MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn sw(pointer: u64) -> Event {
        Event::Software { pointer }
    }

    fn collect(f: impl FnOnce(&mut dyn FnMut(Event))) -> Vec<Event> {
        let mut got = Vec::new();
        f(&mut |e| got.push(e));
        got
    }

    #[test]
    fn an_open_gate_delivers_at_once() {
        let e = EarlyCompletions::default();
        assert!(e.is_open());
        let got = collect(|s| assert_eq!(e.admit(sw(1), 4, s), Admitted::Delivered(1)));
        assert_eq!(got, [sw(1)]);
    }

    #[test]
    fn closed_parks_and_release_delivers_in_order_before_later_completions() {
        let e = EarlyCompletions::default();
        e.close();
        assert!(!e.is_open());
        let got = collect(|s| {
            assert_eq!(e.admit(sw(1), 4, s), Admitted::Parked);
            assert_eq!(e.admit(sw(2), 4, s), Admitted::Parked);
        });
        assert!(got.is_empty());
        assert!(e.release());
        assert!(!e.is_open(), "the parked ones go first");
        // A later completion found before the released ones were collected follows them.
        let got = collect(|s| assert_eq!(e.admit(sw(3), 4, s), Admitted::Delivered(3)));
        assert_eq!(got, [sw(1), sw(2), sw(3)]);
        assert!(e.is_open());
        assert!(!e.release(), "nothing to release twice");
    }

    #[test]
    fn released_completions_are_delivered_within_the_room_given() {
        let e = EarlyCompletions::default();
        e.close();
        collect(|s| {
            for i in 0..5 {
                e.admit(sw(i), 0, s);
            }
        });
        assert!(e.release());
        let got = collect(|s| assert_eq!(e.deliver_released(2, s), (2, true)));
        assert_eq!(got, [sw(0), sw(1)]);
        let got = collect(|s| assert_eq!(e.deliver_released(8, s), (3, false)));
        assert_eq!(got, [sw(2), sw(3), sw(4)]);
        assert!(e.is_open());
    }

    #[test]
    fn a_release_with_nothing_parked_just_opens() {
        let e = EarlyCompletions::default();
        e.close();
        assert!(!e.release());
        assert!(e.is_open());
    }

    #[test]
    fn no_room_on_an_open_gate_keeps_the_completion_for_later() {
        let e = EarlyCompletions::default();
        let got = collect(|s| assert_eq!(e.admit(sw(9), 0, s), Admitted::Delivered(0)));
        assert!(got.is_empty());
        assert!(!e.is_open());
        let got = collect(|s| assert_eq!(e.deliver_released(1, s), (1, false)));
        assert_eq!(got, [sw(9)]);
    }
}
