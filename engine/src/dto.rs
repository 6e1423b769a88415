//! From a work completion to a DAT DTO completion: the per-EP cookie rings that remember
//! what the driver's work completion does not carry (the consumer's cookie, the posted
//! length, the DAT operation), and the status and operation mapping.
//!
//! A work request's wr_id is its slot in the EP's ring for that direction (requests or
//! receives). Both directions complete in order on an RC QP, and an unsignalled
//! (suppressed) request is retired by the next completion after it, so a ring is a plain
//! window: `posted` advances when the EP posts, `retired` when the harvester has turned
//! a completion into an event (never before, so a slot is never reused while its cookie
//! is still to be read). The protocol between poster and harvester is modelled in
//! `loom-tests/tests/dto_cookies.rs`.

use crate::error::{DatError, DatResult};
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use ferrodat_abi::dat::{dto_status, dtos, ib_ext_type, subtype};
use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};

/// The DAT completion status (`DAT_DTO_COMPLETION_STATUS`) of a work completion's status,
/// as OFA dapl maps the verbs statuses.
#[inline]
pub fn dto_status(status: WcStatus) -> u32 {
    // One load from a table (a match compiles to a jump per status).
    DTO_STATUS[status as usize]
}

/// [`dto_status`] as a match.
const fn dto_status_of(status: WcStatus) -> u32 {
    match status {
        WcStatus::Success => dto_status::SUCCESS,
        WcStatus::Flushed => dto_status::ERR_FLUSHED,
        WcStatus::LocalLength => dto_status::ERR_LOCAL_LENGTH,
        WcStatus::LocalQpOperation => dto_status::ERR_LOCAL_EP,
        WcStatus::LocalProtection | WcStatus::LocalAccess => dto_status::ERR_LOCAL_PROTECTION,
        WcStatus::BadResponse => dto_status::ERR_BAD_RESPONSE,
        WcStatus::RemoteAccess => dto_status::ERR_REMOTE_ACCESS,
        WcStatus::RemoteInvalidRequest | WcStatus::RemoteOperation | WcStatus::RemoteAborted => {
            dto_status::ERR_REMOTE_RESPONDER
        }
        WcStatus::RetryExceeded | WcStatus::General => dto_status::ERR_TRANSPORT,
        WcStatus::RnrRetryExceeded => dto_status::ERR_RECEIVER_NOT_READY,
        WcStatus::MwBind => dto_status::RMR_OPERATION_FAILED,
    }
}

/// Every work completion status, in the order of their values (checked below).
const WC_STATUSES: [WcStatus; 15] = WcStatus::ALL;

/// [`dto_status`] by the status's value.
const DTO_STATUS: [u32; WC_STATUSES.len()] = {
    let mut table = [0; WC_STATUSES.len()];
    let mut i = 0;
    while i < WC_STATUSES.len() {
        // The list is in value order, so every status has its place (and no other).
        assert!(WC_STATUSES[i] as usize == i, "WC_STATUSES out of order");
        table[i] = dto_status_of(WC_STATUSES[i]);
        i += 1;
    }
    table
};

/// What a posted DTO was, for its completion event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cookie {
    /// The consumer's `DAT_DTO_COOKIE`.
    pub user_cookie: u64,
    /// Bytes posted (the sum of the local IOV): a send's or write's transfered_length. A
    /// bind ([`dtos::BIND_MW`]) moves no bytes: there it is the RMR's object id.
    pub length: u64,
    /// `DAT_DTOS` of the operation (IB extension operations included).
    pub operation: u32,
    /// The consumer asked for no event on success (`DAT_COMPLETION_SUPPRESS_FLAG`).
    pub suppress: bool,
}

/// A DAT DTO completion, ready for an EVD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtoCompletion {
    /// The consumer's cookie.
    pub user_cookie: u64,
    /// `DAT_DTO_COMPLETION_STATUS`.
    pub status: u32,
    /// Bytes moved (undefined unless the status is success).
    pub transfered_length: u64,
    /// `DAT_DTOS`.
    pub operation: u32,
    /// For IB extension completions (`DAT_IB_DTO_EVENT`): the extension type and the
    /// immediate data where there is one.
    pub ib_extension: Option<(u32, Option<u32>)>,
}

impl DtoCompletion {
    /// The completion event for `wc`, whose request was `cookie`; None if the consumer
    /// suppressed it and it succeeded.
    #[inline]
    pub fn from_work_completion(wc: &WorkCompletion, cookie: &Cookie) -> Option<DtoCompletion> {
        if cookie.suppress && wc.is_ok() {
            return None;
        }
        let (transfered_length, operation, ib_extension) = match wc.opcode {
            // An RDMA WRITE with immediate consumed this receive: no data in it, the
            // length is the write's (the receive reports what arrived).
            WcOpcode::RecvRdmaWithImm => (
                u64::from(wc.byte_len),
                dtos::IB_RECV_IMMED,
                Some((ib_ext_type::RDMA_WRITE_IMMED_DATA, wc.imm())),
            ),
            WcOpcode::Recv => match wc.imm() {
                None => (u64::from(wc.byte_len), dtos::RECEIVE, None),
                Some(imm) => (
                    u64::from(wc.byte_len),
                    dtos::IB_RECV_MSG_IMMED,
                    Some((ib_ext_type::RECV_IMMED_DATA, Some(imm))),
                ),
            },
            // A request: what the cookie says, with the length read or fetched.
            WcOpcode::RdmaRead => {
                let (operation, ext) = request_kind(cookie.operation);
                (u64::from(wc.byte_len), operation, ext)
            }
            WcOpcode::CompareSwap | WcOpcode::FetchAdd => {
                let (operation, ext) = request_kind(cookie.operation);
                (8, operation, ext)
            }
            _ => {
                let (operation, ext) = request_kind(cookie.operation);
                (cookie.length, operation, ext)
            }
        };
        Some(DtoCompletion {
            user_cookie: cookie.user_cookie,
            status: dto_status(wc.status),
            transfered_length,
            operation,
            ib_extension,
        })
    }
}

/// A request's DAT operation and, for the IB extension operations, its extension type.
#[inline(always)]
pub(crate) fn request_kind(operation: u32) -> (u32, Option<(u32, Option<u32>)>) {
    if operation < dtos::EXTENSION_BASE {
        return (operation, None);
    }
    let ext = match operation {
        dtos::IB_RDMA_WRITE_IMMED => ib_ext_type::RDMA_WRITE_IMMED,
        dtos::IB_CMP_SWAP => ib_ext_type::CMP_AND_SWAP,
        dtos::IB_FETCH_ADD => ib_ext_type::FETCH_AND_ADD,
        _ => return (operation, None),
    };
    (operation, Some((ext, None)))
}

/// One direction's cookies of one EP: a window of `capacity` slots. One poster at a time
/// (the EP posts under its QP's lock, which also makes the slot it reserves the one the
/// device gets) and one harvester at a time (the EVD's).
#[derive(Debug)]
pub struct CookieRing {
    slots: Box<[CookieSlot]>,
    mask: u32,
    /// Slots filled so far (written by the poster).
    posted: AtomicU32,
    /// Slots whose completion was harvested, or which a later completion retired (written
    /// by the harvester).
    retired: AtomicU32,
    /// How many may be outstanding: the endpoint's `max_request_dtos` or `max_recv_dtos`
    /// (the ring itself is as large as the QP's queue, which rounds up).
    limit: AtomicU32,
}

/// One posted DTO's cookie, its fields side by side (one cache line for both the poster
/// and the harvester).
#[derive(Debug)]
struct CookieSlot {
    user_cookie: AtomicU64,
    length: AtomicU64,
    /// operation | suppress << 31.
    kind: AtomicU32,
}

const SUPPRESS_BIT: u32 = 1 << 31;

impl CookieRing {
    /// A ring for at least `capacity` outstanding DTOs.
    pub fn new(capacity: u32) -> CookieRing {
        let n = capacity.max(1).next_power_of_two();
        let slot = |_| CookieSlot {
            user_cookie: AtomicU64::new(0),
            length: AtomicU64::new(0),
            kind: AtomicU32::new(0),
        };
        CookieRing {
            slots: (0..n).map(slot).collect(),
            mask: n - 1,
            posted: AtomicU32::new(0),
            retired: AtomicU32::new(0),
            limit: AtomicU32::new(n),
        }
    }

    /// At most `limit` DTOs outstanding from now on (at least one, at most the ring's
    /// capacity): the endpoint's attribute, set at create and by `dat_ep_modify`.
    pub fn set_limit(&self, limit: u32) {
        self.limit.store(limit.clamp(1, self.capacity()), Ordering::Relaxed);
    }

    /// Slots the ring holds.
    pub fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// Slots committed so far (acquire: a reader that sees slot `n` committed may read its
    /// cookie). The harvester learns of a post from the device's completion; this is for
    /// observers and the loom model, which has no device.
    pub fn committed(&self) -> u32 {
        self.posted.load(Ordering::Acquire)
    }

    /// DTOs posted and not yet retired.
    pub fn outstanding(&self) -> u32 {
        self.posted.load(Ordering::Relaxed).wrapping_sub(self.retired.load(Ordering::Acquire))
    }

    #[inline(always)]
    fn slot(&self, index: u32) -> &CookieSlot {
        let i = (index & self.mask) as usize;
        // SAFETY: `slots` has mask + 1 entries (`new`), so a masked index is in bounds.
        unsafe { self.slots.get_unchecked(i) }
    }

    /// Stores `cookie` in the next slot; its wr_id, or DAT_INSUFFICIENT_RESOURCES when as
    /// many DTOs are outstanding as the EP allows. The slot counts as posted only after
    /// [`CookieRing::commit`], so a post the device refuses costs nothing. The caller is
    /// the ring's only poster until it commits (or gives the slot up by not committing).
    #[inline]
    pub fn reserve(&self, cookie: Cookie) -> DatResult<u64> {
        let posted = self.posted.load(Ordering::Relaxed);
        if posted.wrapping_sub(self.retired.load(Ordering::Acquire))
            >= self.limit.load(Ordering::Relaxed)
        {
            return Err(self.full());
        }
        let slot = self.slot(posted);
        slot.user_cookie.store(cookie.user_cookie, Ordering::Relaxed);
        slot.length.store(cookie.length, Ordering::Relaxed);
        let kind = cookie.operation | if cookie.suppress { SUPPRESS_BIT } else { 0 };
        slot.kind.store(kind, Ordering::Relaxed);
        Ok(u64::from(posted))
    }

    #[cold]
    #[inline(never)]
    fn full(&self) -> DatError {
        DatError::insufficient_resources(subtype::RESOURCE_TEP).with_detail(format!(
            "{} DTOs are outstanding on this endpoint, its limit (max_request_dtos or \
             max_recv_dtos); dequeue completions (an unsignalled DTO is retired only by a later \
             completion) or give the EP larger limits",
            self.limit.load(Ordering::Relaxed)
        ))
    }

    /// The reserved slot was handed to the device.
    #[inline]
    pub fn commit(&self) {
        // One poster at a time (see `reserve`): a plain store of the next count. Release:
        // the harvester reads the slot after it sees the completion, which the device
        // writes only after this post reached it; the counter's order is for
        // `outstanding` readers on other threads.
        let posted = self.posted.load(Ordering::Relaxed);
        self.posted.store(posted.wrapping_add(1), Ordering::Release);
    }

    /// `dat_ep_reset`: the QP was recycled; its work requests are gone with it and the
    /// window starts over. (Only while nothing harvests this ring: the CQs skip the old
    /// QP's completions once it was reset.)
    pub fn reset(&self) {
        self.posted.store(0, Ordering::Release);
        self.retired.store(0, Ordering::Release);
    }

    /// The completion for `wr_id` was harvested: its cookie; it and every slot before it
    /// are free again (the ones before were unsignalled, retired by this completion).
    #[inline]
    pub fn complete(&self, wr_id: u64) -> Cookie {
        let slot = self.slot(wr_id as u32);
        let kind = slot.kind.load(Ordering::Relaxed);
        let cookie = Cookie {
            user_cookie: slot.user_cookie.load(Ordering::Relaxed),
            length: slot.length.load(Ordering::Relaxed),
            operation: kind & !SUPPRESS_BIT,
            suppress: kind & SUPPRESS_BIT != 0,
        };
        self.retired.store((wr_id as u32).wrapping_add(1), Ordering::Release);
        cookie
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(wr_id: u64, opcode: WcOpcode, status: WcStatus, byte_len: u32) -> WorkCompletion {
        let mut w = WorkCompletion::default();
        w.wr_id = wr_id;
        w.opcode = opcode;
        w.status = status;
        w.byte_len = byte_len;
        w
    }

    #[test]
    fn every_verbs_status_has_a_dat_status() {
        use WcStatus::*;
        let table = [
            (Success, 0),
            (Flushed, 1),
            (LocalLength, 2),
            (LocalQpOperation, 3),
            (LocalProtection, 4),
            (LocalAccess, 4),
            (BadResponse, 5),
            (RemoteAccess, 6),
            (RemoteInvalidRequest, 7),
            (RemoteOperation, 7),
            (RemoteAborted, 7),
            (RetryExceeded, 8),
            (General, 8),
            (RnrRetryExceeded, 9),
            (MwBind, 11),
        ];
        for (s, d) in table {
            assert_eq!(dto_status(s), d, "{s:?}");
        }
    }

    #[test]
    fn the_ring_refuses_past_its_capacity_and_a_completion_retires_what_came_before() {
        let ring = CookieRing::new(3);
        assert_eq!(ring.capacity(), 4);
        let c =
            |n| Cookie { user_cookie: n, length: 10 * n, operation: dtos::SEND, suppress: n != 3 };
        for n in 0..4 {
            assert_eq!(ring.reserve(c(n)).unwrap(), n);
            ring.commit();
        }
        let e = ring.reserve(c(9)).unwrap_err();
        assert!(e.to_string().contains("4 DTOs are outstanding"), "{e}");
        // The signalled 4th retires the three suppressed ones before it.
        assert_eq!(ring.complete(3), c(3));
        assert_eq!(ring.outstanding(), 0);
        assert_eq!(ring.reserve(c(4)).unwrap(), 4, "the window moved on");
    }

    #[test]
    fn the_ring_refuses_past_its_limit_which_may_change() {
        let ring = CookieRing::new(5);
        assert_eq!(ring.capacity(), 8);
        ring.set_limit(5);
        let c = |n| Cookie { user_cookie: n, length: 1, operation: dtos::SEND, suppress: false };
        for n in 0..5 {
            ring.reserve(c(n)).unwrap();
            ring.commit();
        }
        let e = ring.reserve(c(5)).unwrap_err();
        assert!(e.to_string().contains("5 DTOs are outstanding"), "{e}");
        ring.set_limit(6);
        ring.reserve(c(5)).unwrap();
        ring.commit();
        ring.set_limit(100); // no more than the ring holds
        for n in 6..8 {
            ring.reserve(c(n)).unwrap();
            ring.commit();
        }
        assert!(ring.reserve(c(8)).is_err(), "a full ring, whatever the limit");
    }

    #[test]
    fn completions_become_dat_events_with_the_posted_length_and_operation() {
        let send = Cookie { user_cookie: 7, length: 4096, operation: dtos::SEND, suppress: false };
        let e = DtoCompletion::from_work_completion(
            &wc(0, WcOpcode::Send, WcStatus::Success, 0),
            &send,
        )
        .unwrap();
        assert_eq!(
            (e.user_cookie, e.status, e.transfered_length, e.operation),
            (7, 0, 4096, dtos::SEND)
        );
        let recv = Cookie { user_cookie: 1, length: 64, operation: dtos::RECEIVE, suppress: false };
        let e = DtoCompletion::from_work_completion(
            &wc(0, WcOpcode::Recv, WcStatus::Success, 16),
            &recv,
        )
        .unwrap();
        assert_eq!((e.transfered_length, e.operation, e.ib_extension), (16, dtos::RECEIVE, None));
        let imm = wc(0, WcOpcode::RecvRdmaWithImm, WcStatus::Success, 4096).with_imm(Some(0x7777));
        let e = DtoCompletion::from_work_completion(&imm, &recv).unwrap();
        assert_eq!(e.ib_extension, Some((ib_ext_type::RDMA_WRITE_IMMED_DATA, Some(0x7777))));
        let suppressed = Cookie { suppress: true, ..send };
        assert_eq!(
            DtoCompletion::from_work_completion(
                &wc(0, WcOpcode::Send, WcStatus::Success, 0),
                &suppressed
            ),
            None,
            "a suppressed success makes no event"
        );
        let failed = DtoCompletion::from_work_completion(
            &wc(0, WcOpcode::Send, WcStatus::Flushed, 0),
            &suppressed,
        )
        .expect("a suppressed failure still makes an event");
        assert_eq!(failed.status, dto_status::ERR_FLUSHED);
        let cs =
            Cookie { user_cookie: 2, length: 8, operation: dtos::IB_CMP_SWAP, suppress: false };
        let e = DtoCompletion::from_work_completion(
            &wc(0, WcOpcode::CompareSwap, WcStatus::Success, 8),
            &cs,
        )
        .unwrap();
        assert_eq!(e.ib_extension, Some((ib_ext_type::CMP_AND_SWAP, None)));
    }
}
