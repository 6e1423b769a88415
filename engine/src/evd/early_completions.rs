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
    /// Each with whether it is a notification event ([`super::notification`]), which a
    /// parked event no longer tells by itself (a receive's solicited bit is not in it).
    events: std::collections::VecDeque<(Event, bool)>,
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
    /// Delivered (after whatever was parked before it): these went to the sink.
    Delivered(Delivered),
    /// Parked until the connection's outcome is reported.
    Parked,
}

/// What went to a sink: how many events, and how many of them were admitted as
/// notification events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Events delivered.
    pub events: usize,
    /// Those of them admitted with `notice`.
    pub notices: usize,
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
    /// not fit stays parked, in order, and `Delivered` counts what went). `notice`: it is a
    /// notification event, counted as one whenever it is delivered.
    pub fn admit(
        &self,
        event: Event,
        notice: bool,
        room: usize,
        sink: &mut dyn FnMut(Event),
    ) -> Admitted {
        let mut p = self.lock();
        match p.gate {
            Gate::Closed => {
                p.events.push_back((event, notice));
                Admitted::Parked
            }
            Gate::Open if room > 0 => {
                sink(event);
                Admitted::Delivered(Delivered { events: 1, notices: usize::from(notice) })
            }
            Gate::Open | Gate::Released => {
                p.events.push_back((event, notice));
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
    pub fn deliver_released(&self, room: usize, sink: &mut dyn FnMut(Event)) -> (Delivered, bool) {
        let mut p = self.lock();
        if p.gate != Gate::Released {
            return (Delivered::default(), false);
        }
        let n = self.drain(&mut p, room, sink);
        (n, p.gate == Gate::Released)
    }

    fn drain(&self, p: &mut Parked, room: usize, sink: &mut dyn FnMut(Event)) -> Delivered {
        let mut d = Delivered::default();
        while d.events < room {
            let Some((ev, notice)) = p.events.pop_front() else { break };
            sink(ev);
            d.events += 1;
            d.notices += usize::from(notice);
        }
        if p.events.is_empty() {
            p.gate = Gate::Open;
            self.open.store(true, Ordering::Release);
        }
        d
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

    fn counts(events: usize, notices: usize) -> Delivered {
        Delivered { events, notices }
    }

    fn delivered(events: usize, notices: usize) -> Admitted {
        Admitted::Delivered(counts(events, notices))
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
        let got = collect(|s| assert_eq!(e.admit(sw(1), true, 4, s), delivered(1, 1)));
        assert_eq!(got, [sw(1)]);
    }

    #[test]
    fn closed_parks_and_release_delivers_in_order_before_later_completions() {
        let e = EarlyCompletions::default();
        e.close();
        assert!(!e.is_open());
        let got = collect(|s| {
            assert_eq!(e.admit(sw(1), false, 4, s), Admitted::Parked);
            assert_eq!(e.admit(sw(2), true, 4, s), Admitted::Parked);
        });
        assert!(got.is_empty());
        assert!(e.release());
        assert!(!e.is_open(), "the parked ones go first");
        // A later completion found before the released ones were collected follows them;
        // each keeps whether it notifies.
        let got = collect(|s| assert_eq!(e.admit(sw(3), false, 4, s), delivered(3, 1)));
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
                e.admit(sw(i), i % 2 == 1, 0, s);
            }
        });
        assert!(e.release());
        let got = collect(|s| assert_eq!(e.deliver_released(2, s), (counts(2, 1), true)));
        assert_eq!(got, [sw(0), sw(1)]);
        let got = collect(|s| assert_eq!(e.deliver_released(8, s), (counts(3, 1), false)));
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
        let got = collect(|s| assert_eq!(e.admit(sw(9), true, 0, s), delivered(0, 0)));
        assert!(got.is_empty());
        assert!(!e.is_open());
        let got = collect(|s| assert_eq!(e.deliver_released(1, s), (counts(1, 1), false)));
        assert_eq!(got, [sw(9)]);
    }
}
