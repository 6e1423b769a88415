//! Which events of a DTO EVD are notification events: the ones that end a `dat_evd_wait`
//! and trigger the EVD's CNO.
//!
//! By default every event is one. A receive stream whose endpoint has
//! `DAT_COMPLETION_SOLICITED_WAIT_FLAG` in its `recv_completion_flags` notifies only for a
//! solicited receive (the sender posted it with that flag: the SEND's solicited-event bit)
//! or a failed one, flushes included — IB's definition of a solicited completion, for which
//! a CQ armed solicited-only fires (`ibv_req_notify_cq(cq, 1)`).
//!
//! As OFA dapl keeps one completion type per EVD, set from its endpoints, the EVD has one
//! mode, recomputed whenever a stream starts or stops feeding its CQ or changes its flags:
//!
//! - **Solicited-only** while every stream feeding it is such a receive stream (DAT allows
//!   no other stream on that EVD). Its waiter and its CNO arm the CQ for solicited
//!   completions only, so successful unsolicited receives do not wake them; the waiter
//!   harvests them into the EVD's queue, where `dat_evd_dequeue` takes them and a wait
//!   returns them, oldest first, once a notification event is queued behind them (a wait
//!   whose timeout passes first returns `DAT_TIMEOUT_EXPIRED`, nothing taken). Events
//!   posted to the EVD (connection, software) and connection events and flushes that follow
//!   the CQ's completions notify too; receives held back until their ESTABLISHED was
//!   reported notify as they would have (solicited or failed ones).
//!   A notification lets waits return queued events until a wait finds the EVD empty: a
//!   consumer that dequeued the solicited event itself may get the unsolicited ones queued
//!   behind it from its next wait at once.
//! - **Every event notifies** otherwise: no stream, or a SOLICITED_WAIT receive stream
//!   sharing the EVD with a request stream or another endpoint's plain receive stream. (DAT
//!   forbids that mix; OFA lets the first endpoint's flags decide for all of them. Here no
//!   stream is denied the wake-ups it is owed.)
//!
//! `dat_evd_wait` takes threshold 1 only while any receive stream feeding the EVD is
//! SOLICITED_WAIT, or any request stream is UNSIGNALLED (the man page: "If EVD is used by an
//! Endpoint for a DTO completion stream that is configured for a Consumer-controlled event
//! Notification ... the threshold value must be 1", `DAT_INVALID_STATE` otherwise; OFA dapl
//! checks neither).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Which of an endpoint's completion streams a CQ takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Its requests (sends, RDMA, atomics, binds); `unsignalled`:
    /// `DAT_COMPLETION_UNSIGNALLED_FLAG` is in its `request_completion_flags`.
    Requests {
        /// Only the requests posted without SUPPRESS complete with an event.
        unsignalled: bool,
    },
    /// Its receives; `solicited_wait`: `DAT_COMPLETION_SOLICITED_WAIT_FLAG` is in its
    /// `recv_completion_flags`.
    Receives {
        /// Only solicited and failed receives notify.
        solicited_wait: bool,
    },
}

/// An EVD's notification mode and its count of notification events, shared by its CQ side
/// (which sets them) and its waiter and CNO (which read them without the CQ's lock).
#[derive(Debug, Default)]
pub struct Notices {
    solicited_only: AtomicBool,
    threshold_one: AtomicBool,
    unsignalled: AtomicBool,
    queued: AtomicU64,
}

impl Notices {
    /// Only notification events end a wait or trigger the CNO (see the module docs).
    #[inline]
    pub fn solicited_only(&self) -> bool {
        self.solicited_only.load(Ordering::Acquire)
    }

    /// A SOLICITED_WAIT receive stream feeds the EVD: waits take threshold 1 only.
    #[inline]
    pub fn threshold_one(&self) -> bool {
        self.threshold_one.load(Ordering::Acquire)
    }

    /// An UNSIGNALLED request stream feeds the EVD: waits take threshold 1 only.
    #[inline]
    pub fn unsignalled_requests(&self) -> bool {
        self.unsignalled.load(Ordering::Acquire)
    }

    /// Notification events queued so far (wrapping), counted after they were queued.
    #[inline]
    pub fn count(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }

    /// `n` notification events were queued (call after queueing them).
    #[inline]
    pub fn add(&self, n: u64) {
        self.queued.fetch_add(n, Ordering::Release);
    }

    fn set_mode(&self, mode: Mode) {
        self.threshold_one.store(mode.threshold_one, Ordering::Release);
        self.unsignalled.store(mode.unsignalled, Ordering::Release);
        self.solicited_only.store(mode.solicited_only, Ordering::Release);
    }
}

/// What the streams feeding a CQ make of its EVD.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mode {
    solicited_only: bool,
    threshold_one: bool,
    unsignalled: bool,
}

/// The streams of one QP that a CQ takes.
#[derive(Clone, Copy, Debug, Default)]
struct Feed {
    /// `Some(unsignalled)` if its requests complete here.
    requests: Option<bool>,
    /// `Some(solicited_wait)` if its receives complete here.
    receives: Option<bool>,
}

/// The streams feeding one CQ, by QP number, and the mode they give its EVD (kept under the
/// CQ's lock, published through [`Notices`]).
#[derive(Debug, Default)]
pub struct Feeds {
    by_qp: HashMap<u32, Feed>,
}

impl Feeds {
    /// QP `qpn`'s `stream` completes here (again: its flags may have changed). Returns
    /// whether the EVD is solicited-only now.
    pub fn add(&mut self, qpn: u32, stream: Stream, notices: &Notices) -> bool {
        let feed = self.by_qp.entry(qpn).or_default();
        match stream {
            Stream::Requests { unsignalled } => feed.requests = Some(unsignalled),
            Stream::Receives { solicited_wait } => feed.receives = Some(solicited_wait),
        }
        self.publish(notices)
    }

    /// QP `qpn`'s receives change their flags, if they complete here. Returns whether the
    /// EVD is solicited-only now.
    pub fn update_receives(&mut self, qpn: u32, solicited_wait: bool, notices: &Notices) -> bool {
        if let Some(Feed { receives: Some(sw), .. }) = self.by_qp.get_mut(&qpn) {
            *sw = solicited_wait;
        }
        self.publish(notices)
    }

    /// QP `qpn`'s requests change their flags, if they complete here. Returns whether the
    /// EVD is solicited-only now.
    pub fn update_requests(&mut self, qpn: u32, unsignalled: bool, notices: &Notices) -> bool {
        if let Some(Feed { requests: Some(u), .. }) = self.by_qp.get_mut(&qpn) {
            *u = unsignalled;
        }
        self.publish(notices)
    }

    /// QP `qpn` feeds nothing here any more. Returns whether the EVD is solicited-only now.
    pub fn remove(&mut self, qpn: u32, notices: &Notices) -> bool {
        self.by_qp.remove(&qpn);
        self.publish(notices)
    }

    fn mode(&self) -> Mode {
        let feeds = || self.by_qp.values();
        let solicited_wait = |f: &Feed| f.receives == Some(true);
        Mode {
            solicited_only: !self.by_qp.is_empty()
                && feeds().all(|f| f.requests.is_none() && solicited_wait(f)),
            threshold_one: feeds().any(solicited_wait),
            unsignalled: feeds().any(|f| f.requests == Some(true)),
        }
    }

    fn publish(&self, notices: &Notices) -> bool {
        let mode = self.mode();
        notices.set_mode(mode);
        mode.solicited_only
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SW: Stream = Stream::Receives { solicited_wait: true };
    const PLAIN: Stream = Stream::Receives { solicited_wait: false };

    fn mode(n: &Notices) -> (bool, bool) {
        (n.solicited_only(), n.threshold_one())
    }

    #[test]
    fn only_solicited_wait_receive_streams_make_an_evd_solicited_only() {
        let n = Notices::default();
        let mut f = Feeds::default();
        assert_eq!(mode(&n), (false, false), "no stream: every event notifies");
        assert!(f.add(1, SW, &n));
        assert!(f.add(2, SW, &n));
        assert_eq!(mode(&n), (true, true));
        // Another endpoint's plain receives: every completion notifies, threshold still 1.
        assert!(!f.add(3, PLAIN, &n));
        assert_eq!(mode(&n), (false, true));
        assert!(f.remove(3, &n));
        // Requests of a SOLICITED_WAIT endpoint on the same EVD: the same.
        assert!(!f.add(1, Stream::Requests { unsignalled: false }, &n));
        assert_eq!(mode(&n), (false, true));
        assert!(f.remove(1, &n));
        // dat_ep_modify clears the flag: the EVD goes back to notifying for every event.
        assert!(!f.update_receives(2, false, &n));
        assert_eq!(mode(&n), (false, false));
        assert!(f.update_receives(2, true, &n));
        // A QP whose receives complete elsewhere is not turned into a receive stream here.
        assert!(!f.add(7, Stream::Requests { unsignalled: false }, &n));
        assert!(!f.update_receives(7, true, &n));
        f.remove(7, &n);
        assert!(f.remove(4, &n), "removing what is not there changes nothing");
        assert!(!f.remove(2, &n));
        assert_eq!(mode(&n), (false, false));
    }

    #[test]
    fn an_unsignalled_request_stream_limits_waits_to_threshold_one_while_it_feeds() {
        let n = Notices::default();
        let mut f = Feeds::default();
        let unsignalled = Stream::Requests { unsignalled: true };
        assert!(!f.add(1, unsignalled, &n));
        assert!((n.unsignalled_requests(), n.threshold_one()) == (true, false), "{n:?}");
        assert!(!n.solicited_only(), "every completion of such a stream still notifies");
        f.add(2, Stream::Requests { unsignalled: false }, &n);
        assert!(n.unsignalled_requests(), "one unsignalled stream is enough: {n:?}");
        // dat_ep_modify of request_completion_flags.
        f.update_requests(1, false, &n);
        assert!(!n.unsignalled_requests(), "{n:?}");
        f.update_requests(1, true, &n);
        assert!(n.unsignalled_requests(), "{n:?}");
        // Receives of the same QP are not turned into requests, nor the reverse.
        f.add(3, PLAIN, &n);
        f.update_requests(3, true, &n);
        f.remove(1, &n);
        assert!(!n.unsignalled_requests(), "the endpoint's stream is gone: {n:?}");
    }

    #[test]
    fn the_count_goes_up_by_what_was_added() {
        let n = Notices::default();
        n.add(2);
        n.add(1);
        assert_eq!(n.count(), 3);
    }
}
