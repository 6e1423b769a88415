//! The data path against plain memory standing in for the device: WQE bytes as rdma-core
//! builds them, doorbell records, BlueFlame copies, CQE decoding, ownership across ring
//! wraps, retirement of unsignalled WQEs, stale CQEs of detached QPs, arming.

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::cq_ring::{CqGeometry, CqRing, QpCompletions, RecvSource};
use crate::doorbell::{BlueFlame, CqDoorbell, Model};
use crate::mmio::DevPtr;
use crate::recv_queue::{RecvGeometry, RecvQueue};
use crate::send_queue::{SendGeometry, SendQueue};
use crate::work_request::*;
use ferrodat_abi::mlx5;
use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::Arc;

/// Zeroed, 64-byte aligned memory playing the device's side.
struct Mem(Box<[[u64; 8]]>);

impl Mem {
    fn new(bytes: usize) -> Mem {
        Mem(vec![[0u64; 8]; bytes.div_ceil(64)].into_boxed_slice())
    }
    fn ptr(&mut self) -> DevPtr {
        // SAFETY: the box outlives every queue of a test (declared before them).
        unsafe { DevPtr::new(NonNull::new(self.0.as_mut_ptr().cast::<u8>()).unwrap()) }
    }
    fn bytes(&mut self, offset: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        // SAFETY: tests read inside the memory they allocated.
        unsafe { self.ptr().read_bytes(offset, &mut out) };
        out
    }
    fn be32(&mut self, offset: usize) -> u32 {
        // SAFETY: as above.
        u32::from_be(unsafe { self.ptr().read_u32(offset) })
    }
}

/// Records the model calls: where each doorbell store went, and the bytes the model was
/// told were stored.
#[derive(Default)]
struct Recorder {
    rung: RefCell<Vec<(u32, u32)>>,
    stored: RefCell<Vec<[u8; 8]>>,
}

impl Model for Recorder {
    fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: impl FnOnce() -> [u8; 8]) {
        self.rung.borrow_mut().push((uar_page, offset));
        self.stored.borrow_mut().push(stored());
    }
    fn progress(&self) -> bool {
        false
    }
}

struct Sq {
    ring: Mem,
    db: Mem,
    uar: Mem,
    q: SendQueue,
}

fn send_queue(wqe_cnt: u32, qpn: u32, bf_size: u32) -> Sq {
    send_queue_of(wqe_cnt, qpn, bf_size, false)
}

/// What a CQ completes for QP `qpn` of send queue `sq`, with a receive queue of its own.
fn completions_of(sq: &Sq, qpn: u32) -> Arc<QpCompletions> {
    Arc::new(QpCompletions::new(
        qpn,
        sq.q.tracker().clone(),
        RecvSource::Queue(Arc::new(crate::recv_queue::RecvTracker::new(4))),
    ))
}

fn send_queue_of(wqe_cnt: u32, qpn: u32, bf_size: u32, absent: bool) -> Sq {
    send_queue_with(wqe_cnt, qpn, bf_size, absent, wqe_cnt)
}

fn send_queue_with(wqe_cnt: u32, qpn: u32, bf_size: u32, absent: bool, max_post: u32) -> Sq {
    let mut ring = Mem::new(wqe_cnt as usize * 64);
    let mut db = Mem::new(64);
    let mut uar = Mem::new(4096);
    let g = SendGeometry {
        ring: ring.ptr(),
        wqe_cnt,
        qpn,
        max_inline: 60,
        max_sge: 4,
        sig_all: false,
        max_post,
        // SAFETY: word 1 of the 64-byte record.
        dbrec_sq: unsafe { db.ptr().add(4) },
        absent,
    };
    // SAFETY: bfreg 1 of UAR page 6 at 0x800 + 512 (two 256-byte halves).
    let bf = unsafe { BlueFlame::new(uar.ptr().add(0xa00), bf_size, 6, 0xa00) };
    // SAFETY: the memory lives in the returned struct, next to the queue.
    let q = unsafe { SendQueue::new(g, bf) };
    Sq { ring, db, uar, q }
}

/// A receive queue of `wqe_cnt` one-SGE entries with its ring and doorbell record.
struct Rq {
    ring: Mem,
    db: Mem,
    q: RecvQueue,
}

fn recv_queue(wqe_cnt: u32) -> Rq {
    let mut ring = Mem::new(wqe_cnt as usize * 16);
    let mut db = Mem::new(64);
    // SAFETY: the memory lives in the returned struct, next to the queue.
    let q = unsafe {
        RecvQueue::new(RecvGeometry {
            ring: ring.ptr(),
            wqe_cnt,
            wqe_shift: 4,
            max_sge: 1,
            dbrec_rq: db.ptr(),
        })
    };
    Rq { ring, db, q }
}

fn sge(addr: u64, len: u32, lkey: u32) -> Sge<'static> {
    Sge::new(addr, len, lkey)
}

#[test]
fn a_send_wqe_has_the_bytes_rdma_core_writes_and_goes_by_blueflame() {
    let mut sq = send_queue(16, 0x108, 256);
    let model = Recorder::default();
    let s = [sge(0x1122_3344_5566_7788, 4096, 0x1234)];
    sq.q.post(&[SendWr::new(7, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
    let wqe = sq.ring.bytes(0, 32);
    assert_eq!(
        wqe,
        [
            0x00, 0x00, 0x00, 0x0a, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x08, 0, 0, 0, 0,
            0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x12, 0x34, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
            0x77, 0x88
        ]
    );
    assert_eq!(sq.db.be32(4), 1, "SQ counter: one WQEBB posted");
    assert_eq!(sq.uar.bytes(0xa00, 64), sq.ring.bytes(0, 64), "BlueFlame copy of the WQE");
    assert_eq!(*model.rung.borrow(), [(6, 0xa00)]);
    assert_eq!(model.stored.borrow()[0].to_vec(), sq.ring.bytes(0, 8), "the model gets the store");
    // The next ring uses the other half of the register.
    sq.q.post(&[SendWr::new(8, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
    assert_eq!(model.rung.borrow()[1], (6, 0xa00 + 256));
    assert_eq!(sq.ring.bytes(64, 8), [0, 0, 0x01, 0x0a, 0x00, 0x01, 0x08, 0x02], "index 1");
}

#[test]
fn a_batch_rings_once_with_the_last_control_segment() {
    let mut sq = send_queue(16, 0x42, 256);
    let model = Recorder::default();
    let s = [sge(0x1000, 8, 1), sge(0x2000, 8, 2)];
    let r = Remote { addr: 0xdead_0000, rkey: 0x77 };
    let wrs = [
        SendWr::new(1, SendOp::RdmaWrite(r), Payload::Sges(&s)).flags(SendFlags::NONE),
        SendWr::new(2, SendOp::SendImm(0xabcd_ef01), Payload::Inline(b"hello")),
        SendWr::new(3, SendOp::FetchAdd { remote: r, add: 5 }, Payload::Sges(&s[..1]))
            .flags(SendFlags::SIGNALED | SendFlags::FENCE),
    ];
    sq.q.post(&wrs, &model).unwrap();
    // WRITE: ctrl + raddr + 2 data = 4 ds = 1 WQEBB; SEND_IMM inline 5 B: 2 ds; FA: 4 ds.
    assert_eq!(sq.db.be32(4), 3);
    assert_eq!(sq.ring.bytes(0, 12), [0, 0, 0, 0x08, 0, 0, 0x42, 4, 0, 0, 0, 0]);
    assert_eq!(sq.ring.bytes(16, 16), [0, 0, 0, 0, 0xde, 0xad, 0, 0, 0, 0, 0, 0x77, 0, 0, 0, 0]);
    assert_eq!(
        sq.ring.bytes(64, 16),
        [0, 0, 1, 0x0b, 0, 0, 0x42, 2, 0, 0, 0, 8, 0xab, 0xcd, 0xef, 0x01]
    );
    assert_eq!(sq.ring.bytes(80, 9), [0x80, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']);
    assert_eq!(sq.ring.bytes(128, 12), [0, 0, 2, 0x12, 0, 0, 0x42, 4, 0, 0, 0, 0x88]);
    assert_eq!(sq.ring.bytes(160, 16), [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]);
    // One doorbell: the first 8 bytes of the last control segment, no BlueFlame copy.
    assert_eq!(*model.rung.borrow(), [(6, 0xa00)]);
    assert_eq!(sq.uar.bytes(0xa00, 8), sq.ring.bytes(128, 8));
    assert_eq!(
        model.stored.borrow()[0].to_vec(),
        sq.ring.bytes(128, 8),
        "the model gets the store"
    );
    assert_eq!(sq.uar.bytes(0xa08, 8), [0; 8]);
}

#[test]
fn bad_requests_are_refused_with_what_to_fix_and_earlier_ones_stay_posted() {
    let mut sq = send_queue(4, 1, 256);
    let model = Recorder::default();
    let s = [sge(0x1000, 8, 1); 5];
    let long = [0u8; 61];
    let r = Remote { addr: 0x1001, rkey: 1 };
    let cases = [
        (SendWr::new(1, SendOp::Send, Payload::Sges(&s)), "5 scatter/gather entries"),
        (SendWr::new(1, SendOp::Send, Payload::Inline(&long)), "61 bytes of inline data"),
        (SendWr::new(1, SendOp::FetchAdd { remote: r, add: 1 }, Payload::Sges(&s[..1])), "8-byte"),
        (SendWr::new(1, SendOp::RdmaRead(r), Payload::Inline(b"x")), "cannot carry inline"),
    ];
    for (wr, says) in cases {
        let ok = SendWr::new(0, SendOp::Nop, Payload::EMPTY);
        let err = sq.q.post(&[ok, wr], &model).unwrap_err();
        assert_eq!(err.index, 1);
        assert!(err.to_string().contains(says), "{err}");
    }
    assert_eq!(sq.db.be32(4), 4, "the four NOPs before the refused requests were posted");
    let err = sq.q.post(&[SendWr::new(9, SendOp::Nop, Payload::EMPTY)], &model).unwrap_err();
    assert!(matches!(err.reason, PostErrorReason::QueueFull { capacity: 4 }), "{err}");
    assert!(err.to_string().contains("poll completions first"));
    // A CQE for the last NOP retires all four (the earlier ones were signalled too, but
    // one completion for the newest frees everything before it).
    assert_eq!(sq.q.tracker().complete(3), 0);
    assert_eq!(sq.q.free_blocks(), 4);
}

/// A send queue takes `max_post` requests at once whatever their size, as rdma-core's
/// `mlx5_wq_overflow` counts them: one-block requests leave blocks free but must not
/// outnumber what a CQ sized for `max_send_wr` takes; a larger WQE is one request too.
#[test]
fn a_send_queue_takes_max_post_requests_whatever_their_size() {
    let mut sq = send_queue_with(16, 1, 256, false, 3);
    let model = Recorder::default();
    let s = [sge(0x1000, 8, 1)];
    let two = [sge(0x1000, 8, 1); 2];
    let four = [sge(0x1000, 8, 1); 4];
    let remote = Remote { addr: 0x2000, rkey: 1 };
    // The fast path (one entry), the one-block path (two), the general builder (NOP).
    let one = |id| SendWr::new(id, SendOp::Send, Payload::Sges(&s));
    let paths = [
        one(13),
        SendWr::new(13, SendOp::Send, Payload::Sges(&two)),
        SendWr::new(13, SendOp::Nop, Payload::EMPTY),
    ];
    // An RDMA WRITE of four entries: 6 segments, two blocks, from the general builder.
    sq.q.post(&[SendWr::new(10, SendOp::RdmaWrite(remote), Payload::Sges(&four))], &model).unwrap();
    sq.q.post(&[one(11)], &model).unwrap();
    sq.q.post(&[one(12)], &model).unwrap();
    assert_eq!(sq.q.free_blocks(), 12, "three requests in four blocks");
    for wr in paths {
        let err = sq.q.post(&[wr], &model).unwrap_err();
        assert_eq!(err.reason, PostErrorReason::QueueFull { capacity: 3 }, "{err}");
        assert!(err.to_string().contains("3 requests"), "{err}");
    }
    assert_eq!(sq.db.be32(4), 4, "nothing refused was posted");
    // The larger WQE completes: one request free again, not two.
    assert_eq!(sq.q.tracker().complete(0), 10);
    sq.q.post(&[one(14)], &model).unwrap();
    for wr in paths {
        assert!(sq.q.post(&[wr], &model).is_err());
    }
    // Everything completes (one CQE for the newest): three again, in one batch of four
    // whose last is refused.
    assert_eq!(sq.q.tracker().complete(4), 14);
    let err = sq.q.post(&[one(15), one(16), one(17), one(18)], &model).unwrap_err();
    assert_eq!((err.index, err.reason), (3, PostErrorReason::QueueFull { capacity: 3 }));
    assert_eq!(sq.db.be32(4), 8, "the three before it were posted");
    // A larger WQE among one-block ones: still three requests.
    assert_eq!(sq.q.tracker().complete(7), 17);
    let big = SendWr::new(20, SendOp::RdmaWrite(remote), Payload::Sges(&four));
    let err = sq.q.post(&[one(19), big, one(21), one(22)], &model).unwrap_err();
    assert_eq!(err.index, 3, "{err}");
    assert_eq!(sq.q.free_blocks(), 12);
}

#[test]
fn a_qp_without_a_send_queue_refuses_every_post_and_writes_nothing() {
    // As the QP code builds it for max_send_wr 0: one block of geometry, no memory of its
    // own (here a block the test watches).
    let mut sq = send_queue_of(1, 1, 256, true);
    let model = Recorder::default();
    let r = Remote { addr: 0x1000, rkey: 1 };
    let s = [sge(0x1000, 8, 1)];
    let wrs = [
        SendWr::new(1, SendOp::Send, Payload::EMPTY),
        SendWr::new(2, SendOp::Nop, Payload::EMPTY),
        SendWr::new(3, SendOp::Send, Payload::Inline(b"hi")),
        SendWr::new(4, SendOp::RdmaWrite(r), Payload::Sges(&s)),
        SendWr::new(5, SendOp::FetchAdd { remote: r, add: 1 }, Payload::Sges(&s)),
    ];
    for wr in wrs {
        for batch in [vec![wr], vec![wr, wr]] {
            let err = sq.q.post(&batch, &model).unwrap_err();
            assert_eq!((err.index, err.reason), (0, PostErrorReason::NoSendQueue), "{err}");
            assert!(err.to_string().contains("max_send_wr 0"), "{err}");
        }
    }
    assert_eq!(sq.q.free_blocks(), 0);
    assert_eq!(sq.ring.bytes(0, 64), [0; 64], "nothing was written to the ring");
    assert_eq!(sq.db.be32(4), 0, "nothing was announced");
    assert!(model.rung.borrow().is_empty(), "no doorbell rang");
}

/// A WQE laid out byte by byte from the PRM's segment formats, independently of the
/// driver's builders: control, the remote address if any, one data segment.
fn expected_wqe(
    index: u16,
    qpn: u32,
    opcode: u8,
    fm_ce_se: u8,
    imm: u32,
    remote: Option<Remote>,
    data: &[u8],
) -> Vec<u8> {
    let ds = 2 + u8::from(remote.is_some());
    let mut w = vec![0, (index >> 8) as u8, index as u8, opcode];
    w.extend(&(qpn << 8 | u32::from(ds)).to_be_bytes());
    w.extend([0, 0, 0, fm_ce_se]);
    w.extend(imm.to_be_bytes());
    if let Some(r) = remote {
        w.extend(r.addr.to_be_bytes());
        w.extend(r.rkey.to_be_bytes());
        w.extend([0; 4]);
    }
    w.extend(data);
    w
}

#[test]
fn one_segment_requests_of_every_fast_opcode_have_the_prm_bytes() {
    let r = Remote { addr: 0x0102_0304_0506_0708, rkey: 0x0a0b_0c0d };
    let imm = 0x1122_3344;
    let ops = [
        (SendOp::Send, 0x0a, 0, None),
        (SendOp::SendImm(imm), 0x0b, imm, None),
        (SendOp::RdmaWrite(r), 0x08, 0, Some(r)),
        (SendOp::RdmaWriteImm(r, imm), 0x09, imm, Some(r)),
        (SendOp::RdmaRead(r), 0x10, 0, Some(r)),
    ];
    let bytes: Vec<u8> = (0xc1..=0xcc).collect();
    for (op, opcode, imm, remote) in ops {
        // One gathered entry; the queue's third WQE, so the index shows.
        let mut sq = send_queue(16, 0x0a_bcde, 256);
        let model = Recorder::default();
        let s = [sge(0x1122_3344_5566_7788, 0x99, 0x4242)];
        for i in 0..3 {
            let flags = SendFlags::SIGNALED | SendFlags::SOLICITED;
            sq.q.post(&[SendWr::new(i, op, Payload::Sges(&s)).flags(flags)], &model).unwrap();
        }
        let mut data = vec![0, 0, 0, 0x99, 0, 0, 0x42, 0x42];
        data.extend(0x1122_3344_5566_7788u64.to_be_bytes());
        let want = expected_wqe(2, 0x0a_bcde, opcode, 0x0a, imm, remote, &data);
        assert_eq!(sq.ring.bytes(128, want.len()), want, "{op:?} with one entry");
        assert_eq!(sq.uar.bytes(0xa00, 64), sq.ring.bytes(128, 64), "{op:?}: BlueFlame copy");
        assert_eq!(sq.q.tracker().complete(2), 2, "{op:?}: wr_id through the WQE index");
        if matches!(op, SendOp::RdmaRead(_)) {
            continue; // no inline data for a READ
        }
        // Inline data of every length the one-segment path takes, each an unsignalled WQE.
        for len in 1..=12 {
            let mut sq = send_queue(16, 0x0a_bcde, 256);
            let wr = SendWr::new(7, op, Payload::Inline(&bytes[..len])).flags(SendFlags::NONE);
            sq.q.post(&[wr], &model).unwrap();
            let mut data = (len as u32 | 0x8000_0000).to_be_bytes().to_vec();
            data.extend(&bytes[..len]);
            data.resize(16, 0);
            let want = expected_wqe(0, 0x0a_bcde, opcode, 0, imm, remote, &data);
            assert_eq!(sq.ring.bytes(0, want.len()), want, "{op:?} with {len} inline bytes");
            assert_eq!(sq.db.be32(4), 1);
        }
    }
}

#[test]
fn the_fence_after_a_bind_reaches_the_next_request_of_a_batch_and_only_it() {
    use crate::mw::MwBind;
    let mut sq = send_queue(8, 0x42, 256);
    let model = Recorder::default();
    let region = [sge(0x7f00_1000_2000, 0x3000, 0x5605)];
    let bind = MwBind { window_key: 0x100, new_key: 0x101, access: crate::mr::Access::REMOTE_READ };
    sq.q.post(&[SendWr::new(1, SendOp::BindMw(bind), Payload::Sges(&region))], &model).unwrap();
    // Three one-segment requests in one batch after the bind's three blocks: the first is
    // fenced (built by the general builders), the others take the fast path again.
    let s = [sge(0x1000, 8, 1)];
    let send = |i| SendWr::new(i, SendOp::Send, Payload::Sges(&s));
    sq.q.post(&[send(2), send(3), send(4)], &model).unwrap();
    assert_eq!(sq.ring.bytes(3 * 64 + 11, 1), [0x28], "CQ_UPDATE | INITIATOR_SMALL_FENCE");
    assert_eq!(sq.ring.bytes(4 * 64 + 11, 1), [0x08]);
    assert_eq!(sq.ring.bytes(5 * 64 + 11, 1), [0x08]);
    // The ring (8 blocks) has 2 left; the room check sees the real retired count again.
    sq.q.post(&[send(5)], &model).unwrap();
    sq.q.post(&[send(6)], &model).unwrap();
    let err = sq.q.post(&[send(7)], &model).unwrap_err();
    assert!(matches!(err.reason, PostErrorReason::QueueFull { capacity: 8 }), "{err}");
    assert_eq!(sq.q.tracker().complete(7), 6, "the last block's completion retires them all");
    sq.q.post(&[send(7)], &model).unwrap();
    assert_eq!(sq.ring.bytes(11, 1), [0x08], "block 0 again, unfenced");
}

#[test]
fn a_full_ring_refuses_until_completions_retire_blocks_then_posts_again() {
    let mut sq = send_queue(4, 1, 256);
    let model = Recorder::default();
    let s = [sge(0x1000, 64, 1)];
    let send = |i: u64| SendWr::new(i, SendOp::Send, Payload::Sges(&s));
    for i in 0..4 {
        sq.q.post(&[send(i)], &model).unwrap();
    }
    let err = sq.q.post(&[send(4)], &model).unwrap_err();
    assert!(matches!(err.reason, PostErrorReason::QueueFull { capacity: 4 }), "{err}");
    assert_eq!(sq.db.be32(4), 4, "the refused request was not announced");
    // The poller retires the first two; the poster sees it on its next post.
    assert_eq!(sq.q.tracker().complete(1), 1);
    sq.q.post(&[send(4)], &model).unwrap();
    sq.q.post(&[send(5)], &model).unwrap();
    assert!(sq.q.post(&[send(6)], &model).is_err(), "two blocks freed, two used");
    assert_eq!(sq.db.be32(4), 6);
    assert_eq!(sq.ring.bytes(0, 4), [0, 0, 4, 0x0a], "WQE 4 went to block 0");
}

#[test]
fn inline_data_wraps_around_the_ring_end() {
    let mut sq = send_queue(4, 1, 0);
    let model = Recorder::default();
    for i in 0..3 {
        sq.q.post(&[SendWr::new(i, SendOp::Nop, Payload::EMPTY)], &model).unwrap();
    }
    sq.q.tracker().complete(2);
    let data: Vec<u8> = (0..60).collect();
    sq.q.post(&[SendWr::new(9, SendOp::Send, Payload::Inline(&data))], &model).unwrap();
    // ctrl + 4 ds of inline = 5 ds = 2 WQEBBs: block 3 then block 0.
    assert_eq!(sq.ring.bytes(192 + 16, 4), [0x80, 0, 0, 60]);
    let mut got = sq.ring.bytes(192 + 20, 44);
    got.extend(sq.ring.bytes(0, 16));
    assert_eq!(got, data);
    assert_eq!(sq.db.be32(4), 5);
    // bfreg with buf_size 0 (doorbell only): no copy, same register offset each time.
    assert!(model.rung.borrow().iter().all(|&r| r == (6, 0xa00)));
}

struct Cq {
    ring: Mem,
    db: Mem,
    uar: Mem,
    cq: CqRing,
}

fn cq(ncqe: u32) -> Cq {
    let mut ring = Mem::new(ncqe as usize * 64);
    for i in 0..ncqe as usize {
        // SAFETY: op_own of entry i.
        unsafe { ring.ptr().write_u8(i * 64 + 63, 0xf0) };
    }
    let mut db = Mem::new(64);
    let mut uar = Mem::new(4096);
    let g = CqGeometry { ring: ring.ptr(), ncqe, dbrec: db.ptr(), cqn: 0x40 };
    // SAFETY: the memory lives next to the ring in the returned struct.
    let cq = unsafe { CqRing::new(g, CqDoorbell::new(uar.ptr(), 0)) };
    Cq { ring, db, uar, cq }
}

/// What the device writes for one completion (`index` is the producer index).
#[allow(clippy::too_many_arguments)]
fn write_cqe(
    c: &mut Cq,
    index: u32,
    op: u8,
    uidx: u32,
    sop_qpn: u32,
    counter: u16,
    byte_cnt: u32,
    imm: u32,
    syndrome: u8,
) {
    let ncqe = (c.ring.0.len()) as u32;
    write_cqe_at(c.ring.ptr(), ncqe, index, op, uidx, sop_qpn, counter, byte_cnt, imm, syndrome);
}

/// [`write_cqe`] into the ring at `p` of `ncqe` entries.
#[allow(clippy::too_many_arguments)]
fn write_cqe_at(
    p: DevPtr,
    ncqe: u32,
    index: u32,
    op: u8,
    uidx: u32,
    sop_qpn: u32,
    counter: u16,
    byte_cnt: u32,
    imm: u32,
    syndrome: u8,
) {
    let base = ((index & (ncqe - 1)) * 64) as usize;
    let owner = u8::from(index & ncqe != 0);
    // SAFETY: fields of entry `index`, op_own last as the device writes it.
    unsafe {
        p.write_u32(base + 24, 0x0000_0077u32.to_be());
        p.write_u32(base + 32, uidx.to_be());
        p.write_u32(base + 36, imm.to_be());
        p.write_u32(base + 44, byte_cnt.to_be());
        p.write_u8(base + 55, syndrome);
        p.write_u32(base + 56, sop_qpn.to_be());
        p.write_u16(base + 60, counter.to_be());
        p.write_u8(base + 63, (op << 4) | owner);
    }
}

#[test]
fn one_poll_crosses_the_ring_end_and_stops_at_an_entry_of_the_last_pass() {
    let mut sq = send_queue(16, 0x108, 256);
    let mut c = cq(4);
    let model = Recorder::default();
    c.cq.attachments().attach(2, completions_of(&sq, 0x108));
    let s = [sge(0x1000, 8, 1)];
    let mut send_and_complete = |c: &mut Cq, p: u32| {
        let wr = SendWr::new(u64::from(p) + 1000, SendOp::Send, Payload::Sges(&s));
        sq.q.post(&[wr], &model).unwrap();
        write_cqe(c, p, 0, 2, (0x0a << 24) | 0x108, p as u16, 0, 0, 0);
    };
    let mut out = [WorkCompletion::default(); 8];
    for p in 0..3 {
        send_and_complete(&mut c, p);
    }
    assert_eq!(c.cq.poll(&mut out, &model), 3);
    // Entries 3 (first pass, owner 0), then 4 and 5 (second pass, owner 1) at ring slots
    // 0 and 1; slot 2 still holds entry 2 of the first pass, which is not software's now.
    for p in 3..6 {
        send_and_complete(&mut c, p);
    }
    assert_eq!(c.cq.poll(&mut out, &model), 3);
    assert_eq!(out[..3].iter().map(|wc| wc.wr_id).collect::<Vec<_>>(), [1003, 1004, 1005]);
    assert_eq!(c.db.be32(0), 6, "set_ci after the wrap");
    assert_eq!(c.cq.poll(&mut out, &model), 0, "entry 2 of the first pass is stale");
    // A poll with room for fewer than wait takes just those.
    for p in 6..9 {
        send_and_complete(&mut c, p);
    }
    assert_eq!(c.cq.poll(&mut out[..2], &model), 2);
    assert_eq!((out[0].wr_id, out[1].wr_id), (1006, 1007));
    assert_eq!(c.cq.poll(&mut out, &model), 1);
    assert_eq!(out[0].wr_id, 1008);
}

/// A send queue (QPN 0x108) and a receive queue with `receives` posted (wr_ids from
/// `first_wr_id`, 64 bytes at 0x5000 each), reporting to a CQ of `ncqe` entries under user
/// index 5.
fn qp_on_cq(ncqe: u32, receives: u64, first_wr_id: u64) -> (Sq, Rq, Cq) {
    let sq = send_queue(16, 0x108, 256);
    let mut rq = recv_queue(16);
    let c = cq(ncqe);
    let qp = Arc::new(QpCompletions::new(
        0x108,
        sq.q.tracker().clone(),
        RecvSource::Queue(rq.q.tracker().clone()),
    ));
    c.cq.attachments().attach(5, qp);
    let buf = [sge(0x5000, 64, 9)];
    for i in 0..receives {
        rq.q.post(&[RecvWr { wr_id: first_wr_id + i, sges: &buf }]).unwrap();
    }
    (sq, rq, c)
}

#[test]
fn polling_decodes_completions_and_follows_ownership_across_wraps() {
    let (mut sq, mut rq, mut c) = qp_on_cq(4, 12, 100);
    let model = Recorder::default();
    assert_eq!(rq.db.be32(0), 12);
    assert_eq!(rq.ring.bytes(16, 16), [0, 0, 0, 64, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0x50, 0]);

    let mut out = [WorkCompletion::default(); 8];
    assert_eq!(c.cq.poll(&mut out, &model), 0, "nothing yet (op_own 0xF0)");
    // Three rounds of the 4-entry ring: ownership flips each round.
    let s = [sge(0x1000, 8, 1)];
    for round in 0..3u32 {
        for k in 0..4u32 {
            let p = round * 4 + k;
            if k % 2 == 0 {
                sq.q.post(&[SendWr::new(u64::from(p), SendOp::Send, Payload::Sges(&s))], &model)
                    .unwrap();
                write_cqe(&mut c, p, 0, 5, (0x0a << 24) | 0x108, (p / 2) as u16, 0, 0, 0);
            } else {
                write_cqe(&mut c, p, 3, 5, 0x108, 0, 33, 0x0102_0304, 0);
            }
        }
        let n = c.cq.poll(&mut out, &model);
        assert_eq!(n, 4, "round {round}");
        assert_eq!(out[0].wr_id, u64::from(round * 4));
        assert_eq!(
            (out[0].opcode, out[0].status, out[0].qpn),
            (WcOpcode::Send, WcStatus::Success, 0x108)
        );
        assert_eq!(out[1].wr_id, u64::from(100 + round * 2));
        assert_eq!(
            (out[1].opcode, out[1].byte_len, out[1].imm(), out[1].src_qp),
            (WcOpcode::Recv, 33, Some(0x0102_0304), 0x77)
        );
        assert_eq!(c.db.be32(0), (round + 1) * 4, "set_ci published");
        assert_eq!(c.cq.poll(&mut out, &model), 0);
    }
    // An error completion: syndrome to status, wr_id kept.
    sq.q.post(
        &[SendWr::new(77, SendOp::RdmaRead(Remote { addr: 0, rkey: 1 }), Payload::Sges(&s))],
        &model,
    )
    .unwrap();
    write_cqe(&mut c, 12, 13, 5, (0x10 << 24) | 0x108, 6, 0, 0, 0x13);
    assert_eq!(c.cq.poll(&mut out, &model), 1);
    assert_eq!(
        (out[0].wr_id, out[0].status, out[0].opcode),
        (77, WcStatus::RemoteAccess, WcOpcode::RdmaRead)
    );
    assert_eq!(out[0].syndrome(), Some((0x13, 0)));
}

#[test]
fn plain_receives_decode_with_their_length_sender_and_solicited_bit() {
    let (_sq, _rq, mut c) = qp_on_cq(8, 6, 200);
    let model = Recorder::default();
    // MLX5_CQE_RESP_SEND (2): the next receive in order; the SE bit (op_own bit 1) set on
    // the second.
    let resp_send = 2u8;
    write_cqe(&mut c, 0, resp_send, 5, 0x108, 0, 8, 0xdead, 0);
    write_cqe(&mut c, 1, resp_send, 5, 0x108, 0, 0, 0, 0);
    // SAFETY: op_own of entry 1, still software's (owner bit 0 in the first pass).
    unsafe { c.ring.ptr().write_u8(64 + 63, (resp_send << 4) | 0x02) };
    let mut wc = WorkCompletion::default();
    for (want_id, want_len, solicited) in [(200, 8, false), (201, 0, true)] {
        assert!(c.cq.poll_one(&mut wc, &model));
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.status, wc.byte_len, wc.qpn, wc.src_qp),
            (want_id, WcOpcode::Recv, WcStatus::Success, want_len, 0x108, 0x77)
        );
        assert_eq!((wc.imm(), wc.solicited()), (None, solicited), "imm is not read for a SEND");
    }
    // The batch path decodes them the same way, in order.
    write_cqe(&mut c, 2, resp_send, 5, 0x108, 0, 64, 0, 0);
    write_cqe(&mut c, 3, resp_send, 5, 0x108, 0, 1, 0, 0);
    let mut out = [WorkCompletion::default(); 4];
    assert_eq!(c.cq.poll(&mut out, &model), 2);
    assert_eq!((out[0].wr_id, out[0].byte_len, out[1].wr_id, out[1].byte_len), (202, 64, 203, 1));
    assert!(!out[0].solicited() && out[1].imm().is_none());
    assert_eq!(c.db.be32(0), 4);
    assert_eq!(out[0].invalidated_rkey(), None);
}

#[test]
fn a_send_with_invalidate_reports_the_rkey_it_invalidated() {
    let (_sq, _rq, mut c) = qp_on_cq(8, 2, 300);
    let model = Recorder::default();
    // MLX5_CQE_RESP_SEND_INV (4): the rkey in the immediate field; then SEND_IMM (3).
    write_cqe(&mut c, 0, 4, 5, 0x108, 0, 16, 0x1234_5678, 0);
    write_cqe(&mut c, 1, 3, 5, 0x108, 0, 16, 0x0bad_cafe, 0);
    let mut out = [WorkCompletion::default(); 2];
    assert_eq!(c.cq.poll(&mut out, &model), 2);
    assert_eq!((out[0].wr_id, out[0].opcode, out[0].byte_len), (300, WcOpcode::Recv, 16));
    assert_eq!((out[0].invalidated_rkey(), out[0].imm()), (Some(0x1234_5678), None));
    assert_eq!((out[1].invalidated_rkey(), out[1].imm()), (None, Some(0x0bad_cafe)));
}

/// A requester's success for a SEND or RDMA WRITE with immediate carries verbs' WITH_IMM
/// (rdma-core's `handle_good_req`) without a value; plain ones, and errors, carry none.
/// Through the single poll (which decodes plain requests inline) and the batch.
#[test]
fn requester_completions_of_requests_with_immediate_carry_the_with_imm_flag() {
    let (mut sq, _rq, mut c) = qp_on_cq(16, 0, 0);
    let model = Recorder::default();
    let s = [sge(0x1000, 8, 1)];
    let remote = Remote { addr: 0x9000, rkey: 3 };
    let ops = [
        (SendOp::SendImm(0x0102_0304), mlx5::opcode::SEND_IMM, WcOpcode::Send, true),
        (SendOp::RdmaWriteImm(remote, 5), mlx5::opcode::RDMA_WRITE_IMM, WcOpcode::RdmaWrite, true),
        (SendOp::Send, mlx5::opcode::SEND, WcOpcode::Send, false),
        (SendOp::RdmaWrite(remote), mlx5::opcode::RDMA_WRITE, WcOpcode::RdmaWrite, false),
    ];
    for round in 0..2u32 {
        for (i, (op, wqe_opcode, ..)) in ops.iter().enumerate() {
            let p = round * 4 + i as u32;
            sq.q.post(&[SendWr::new(u64::from(p), *op, Payload::Sges(&s))], &model).unwrap();
            // Whatever sits in the CQE's immediate field is not the request's: not reported.
            let sop_qpn = (u32::from(*wqe_opcode) << 24) | 0x108;
            write_cqe(&mut c, p, mlx5::cqe_opcode::REQ, 5, sop_qpn, p as u16, 0, 0xdead, 0);
        }
        let mut out = [WorkCompletion::default(); 4];
        if round == 0 {
            for wc in &mut out {
                assert!(c.cq.poll_one(wc, &model));
            }
        } else {
            assert_eq!(c.cq.poll(&mut out, &model), 4);
        }
        for (i, (wc, (op, _, opcode, with_imm))) in out.iter().zip(&ops).enumerate() {
            assert_eq!(
                (wc.wr_id, wc.opcode, wc.status, wc.carries_imm(), wc.imm()),
                (u64::from(round * 4) + i as u64, *opcode, WcStatus::Success, *with_imm, None),
                "round {round}: {op:?}"
            );
        }
    }
    // A failed WRITE with immediate: no flags on an error completion, as in rdma-core.
    sq.q.post(&[SendWr::new(9, SendOp::RdmaWriteImm(remote, 5), Payload::Sges(&s))], &model)
        .unwrap();
    let sop_qpn = (u32::from(mlx5::opcode::RDMA_WRITE_IMM) << 24) | 0x108;
    let flushed = mlx5::cqe_syndrome::WR_FLUSH_ERR;
    write_cqe(&mut c, 8, mlx5::cqe_opcode::REQ_ERR, 5, sop_qpn, 8, 0, 0, flushed);
    let mut wc = WorkCompletion::default();
    assert!(c.cq.poll_one(&mut wc, &model));
    assert_eq!((wc.wr_id, wc.status, wc.opcode), (9, WcStatus::Flushed, WcOpcode::RdmaWrite));
    assert!(!wc.carries_imm());
    // A receive with immediate carries the flag and its value.
    let (_sq, _rq, mut c) = qp_on_cq(8, 1, 40);
    write_cqe(&mut c, 0, mlx5::cqe_opcode::RESP_SEND_IMM, 5, 0x108, 0, 4, 0x0bad_cafe, 0);
    assert!(c.cq.poll_one(&mut wc, &model));
    assert_eq!((wc.wr_id, wc.carries_imm(), wc.imm()), (40, true, Some(0x0bad_cafe)));
}

#[test]
fn a_detached_qps_leftover_completions_are_skipped() {
    let sq = send_queue(16, 1, 0);
    let mut c = cq(8);
    let model = Recorder::default();
    let qp = |qpn| completions_of(&sq, qpn);
    let (one, two) = (qp(1), qp(2));
    c.cq.attachments().attach(1, one.clone());
    c.cq.attachments().attach(2, two);
    let mut out = [WorkCompletion::default(); 8];
    c.cq.poll(&mut out, &model); // picks the attachments up
    write_cqe(&mut c, 0, 0, 1, 1, 0, 0, 0, 0);
    write_cqe(&mut c, 1, 0, 2, 2, 0, 0, 0, 0);
    write_cqe(&mut c, 2, 0, 1, 1, 0, 0, 0, 0);
    // SAFETY: the CQ's ring of 8 entries.
    let end = unsafe { crate::cq_ring::software_end(c.ring.ptr(), 8, 0) };
    assert_eq!(end, 3, "the device writes entry 3 next");
    c.cq.attachments().detach(1, &one, end, true);
    // The index is reused at once (a reset QP keeps it): its new entry is reported.
    c.cq.attachments().attach(1, qp(0x11));
    write_cqe(&mut c, 3, 0, 1, 0x11, 0, 0, 0, 0);
    assert_eq!(c.cq.poll(&mut out, &model), 2);
    assert_eq!((out[0].qpn, out[1].qpn), (2, 0x11), "the old entries skipped, the new one not");
    assert_eq!(c.db.be32(0), 4, "the skipped entries are consumed too");
}

/// A model whose progress runs `then` once (what another thread or the device does while
/// a poll runs).
struct OnProgress(RefCell<Option<Box<dyn FnOnce()>>>);

impl Model for OnProgress {
    fn doorbell_rung(&self, _: u32, _: u32, _: impl FnOnce() -> [u8; 8]) {}
    fn progress(&self) -> bool {
        self.0.borrow_mut().take().map(|then| then()).is_some()
    }
}

#[test]
fn a_qp_attached_while_a_poll_runs_has_its_first_completion_reported() {
    for room in [4, 1] {
        let sq = send_queue(16, 7, 0);
        let mut c = cq(8);
        let mut out = [WorkCompletion::default(); 4];
        assert_eq!(c.cq.poll(&mut out[..room], &Recorder::default()), 0, "changes taken in");
        // After the poll looked for attachment changes and found the CQ empty, a QP is
        // attached and completes a request (here in the progress the empty poll asks for).
        let qp = completions_of(&sq, 7);
        let (attachments, ring) = (c.cq.attachments().clone(), c.ring.ptr());
        let model = OnProgress(RefCell::new(Some(Box::new(move || {
            attachments.attach(3, qp);
            write_cqe_at(ring, 8, 0, 0, 3, (u32::from(mlx5::opcode::NOP) << 24) | 7, 0, 0, 0, 0);
        }))));
        assert_eq!(c.cq.poll(&mut out[..room], &model), 1, "room {room}");
        assert_eq!((out[0].qpn, out[0].opcode), (7, WcOpcode::Nop), "room {room}");
        assert_eq!(c.db.be32(0), 1, "room {room}: consumed");
    }
}

#[test]
fn one_completion_at_a_time_across_wraps_and_past_skipped_entries() {
    let mut sq = send_queue(16, 0x108, 256);
    let mut rq = recv_queue(16);
    let mut c = cq(4);
    let model = Recorder::default();
    let recv = rq.q.tracker().clone();
    let qp = |qpn| {
        Arc::new(QpCompletions::new(qpn, sq.q.tracker().clone(), RecvSource::Queue(recv.clone())))
    };
    let six = qp(0x109);
    c.cq.attachments().attach(5, qp(0x108));
    c.cq.attachments().attach(6, six.clone());
    let mut wc = WorkCompletion::default();
    assert!(!c.cq.poll_one(&mut wc, &model), "nothing yet (op_own 0xF0)");
    let s = [sge(0x1000, 8, 1)];
    // Two passes of the 4-entry ring: a SEND's completion, then one of a detached QP (6),
    // skipped, then an error; the index goes on past the skipped entry.
    for pass in 0..2u32 {
        let p = pass * 4;
        let wr_id = u64::from(p) + 500;
        sq.q.post(&[SendWr::new(wr_id, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
        let counter = (pass * 2) as u16;
        write_cqe(&mut c, p, 0, 5, (0x0a << 24) | 0x108, counter, 0, 0, 0);
        write_cqe(&mut c, p + 1, 0, 6, (0x0a << 24) | 0x109, 0, 0, 0, 0);
        let read = SendOp::RdmaRead(Remote { addr: 0, rkey: 1 });
        sq.q.post(&[SendWr::new(wr_id + 1, read, Payload::Sges(&s))], &model).unwrap();
        write_cqe(&mut c, p + 2, 13, 5, (0x10 << 24) | 0x108, counter + 1, 0, 0, 0x13);
        write_cqe(&mut c, p + 3, 0, 5, (0x0a << 24) | 0x108, counter, 0, 0, 0);
        if pass == 0 {
            c.cq.attachments().detach(6, &six, p + 4, true);
        }
        assert!(c.cq.poll_one(&mut wc, &model), "pass {pass}");
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.status, wc.qpn),
            (wr_id, WcOpcode::Send, WcStatus::Success, 0x108)
        );
        assert_eq!(c.db.be32(0), p + 1, "set_ci after one entry");
        assert!(c.cq.poll_one(&mut wc, &model));
        assert_eq!(
            (wc.wr_id, wc.status),
            (wr_id + 1, WcStatus::RemoteAccess),
            "past the skipped entry"
        );
        assert_eq!(c.db.be32(0), p + 3, "the skipped entry is consumed too");
        // poll() with one entry takes the same path.
        let mut one = [WorkCompletion::default()];
        assert_eq!(c.cq.poll(&mut one, &model), 1);
        assert_eq!(one[0].wr_id, wr_id, "the same WQE again: its wr_id");
        assert_eq!(c.cq.poll(&mut one, &model), 0, "the next entry is of the last pass");
        assert!(!c.cq.poll_one(&mut wc, &model));
    }
    // A receive, decoded out of line.
    write_cqe(&mut c, 8, 3, 5, 0x108, 0, 33, 0x0102_0304, 0);
    rq.q.post(&[RecvWr { wr_id: 700, sges: &[sge(0x5000, 64, 9)] }]).unwrap();
    assert!(c.cq.poll_one(&mut wc, &model));
    assert_eq!(
        (wc.wr_id, wc.opcode, wc.byte_len, wc.imm(), wc.src_qp),
        (700, WcOpcode::Recv, 33, Some(0x0102_0304), 0x77)
    );
}

#[test]
fn arming_writes_the_arm_word_and_the_doorbell() {
    let mut c = cq(8);
    let model = Recorder::default();
    c.cq.arm(false, 0, &model);
    assert_eq!(c.db.be32(4), 0);
    assert_eq!(c.uar.bytes(0x20, 8), [0, 0, 0, 0, 0, 0, 0, 0x40]);
    assert_eq!(model.stored.borrow()[0], [0, 0, 0, 0, 0, 0, 0, 0x40], "the model gets the store");
    write_cqe(&mut c, 0, 0, 9, 1, 0, 0, 0, 0); // unattached: consumed, not reported
    let mut out = [WorkCompletion::default(); 1];
    c.cq.poll(&mut out, &model);
    c.cq.arm(true, 1, &model);
    let word = (1 << 28) | (1 << 24) | 1;
    assert_eq!(c.db.be32(4), word);
    assert_eq!(c.uar.bytes(0x20, 8), [0x11, 0, 0, 1, 0, 0, 0, 0x40]);
    assert_eq!(*model.rung.borrow(), [(0, 0x20), (0, 0x20)]);
    assert_eq!(model.stored.borrow()[1], [0x11, 0, 0, 1, 0, 0, 0, 0x40]);
}

#[test]
fn a_bind_wqe_has_the_bytes_rdma_core_writes_and_fences_the_next_request() {
    use crate::mr::Access;
    use crate::mw::MwBind;
    let mut sq = send_queue(16, 0x42, 256);
    let model = Recorder::default();
    let region = [sge(0x7f00_1000_2000, 0x3000, 0x5605)];
    let bind = MwBind {
        window_key: 0x0012_3400,
        new_key: 0x0012_3401,
        access: Access::REMOTE_READ | Access::REMOTE_WRITE,
    };
    sq.q.post(&[SendWr::new(5, SendOp::BindMw(bind), Payload::Sges(&region))], &model).unwrap();
    // rdma-core's _mlx5_post_send for IBV_WR_BIND_MW of a type 1 window (set_bind_wr):
    // ctrl, UMR ctrl (3 ds), mkey context (4 ds), one KLM padded to 64 bytes (4 ds).
    let mut expected = vec![
        0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x42, 12, 0, 0, 0, 0x08, 0x00, 0x12, 0x34, 0x00,
        // UMR ctrl: INLINE | TRNSLATION_OFFSET, klm_octowords 4, mkey_mask FREE | MKEY |
        // LEN | START_ADDR | the four access bits.
        0x90, 0, 0, 0, 0x00, 0x04, 0x00, 0x00, 0, 0, 0, 0, 0x20, 0x3c, 0x20, 0x41,
    ];
    expected.extend([0u8; 32]);
    // mkey context: access REMOTE_WRITE | REMOTE_READ, qpn 0xffffff (type 1) | new variant.
    expected.extend([0, 0, 0x30, 0, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
    expected.extend([0, 0, 0x7f, 0x00, 0x10, 0x00, 0x20, 0x00, 0, 0, 0, 0, 0, 0, 0x30, 0x00]);
    expected.extend([0u8; 32]);
    // KLM: byte count, the region's key, the address.
    expected.extend([0, 0, 0x30, 0, 0, 0, 0x56, 0x05, 0, 0, 0x7f, 0x00, 0x10, 0x00, 0x20, 0x00]);
    expected.extend([0u8; 48]);
    assert_eq!(sq.ring.bytes(0, 192), expected);
    assert_eq!(sq.db.be32(4), 3, "12 ds: three WQEBBs");
    // BlueFlame copies the whole single WQE (192 bytes fit a 256-byte half).
    assert_eq!(sq.uar.bytes(0xa00, 192), expected);

    // The next request gets the small fence; the one after it does not.
    let s = [sge(0x1000, 8, 1)];
    sq.q.post(&[SendWr::new(6, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
    sq.q.post(&[SendWr::new(7, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
    assert_eq!(sq.ring.bytes(192 + 11, 1), [0x28], "CQ_UPDATE | INITIATOR_SMALL_FENCE");
    assert_eq!(sq.ring.bytes(256 + 11, 1), [0x08]);

    // Unbind: no KLM, FREE in the mkey context; a FENCE request after it keeps FENCE only.
    let unbind =
        MwBind { window_key: 0x0012_3401, new_key: 0x0012_3402, access: Access::default() };
    let wrs = [
        SendWr::new(8, SendOp::BindMw(unbind), Payload::EMPTY).flags(SendFlags::NONE),
        SendWr::new(9, SendOp::Send, Payload::Sges(&s)).flags(SendFlags::FENCE),
    ];
    sq.q.post(&wrs, &model).unwrap();
    let mut expected = vec![
        0x00, 0x00, 0x05, 0x25, 0x00, 0x00, 0x42, 8, 0, 0, 0, 0x00, 0x00, 0x12, 0x34, 0x01, 0x90,
        0, 0, 0, 0x00, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0x20, 0x00, 0x20, 0x00,
    ];
    expected.extend([0u8; 32]);
    expected.extend([0x40, 0, 0, 0, 0xff, 0xff, 0xff, 0x02]);
    expected.extend([0u8; 56]);
    assert_eq!(sq.ring.bytes(5 * 64, 128), expected);
    assert_eq!(sq.ring.bytes(7 * 64 + 11, 1), [0x80], "FENCE replaces the small fence");

    // Malformed binds are refused before anything is written.
    let two = [sge(0x1000, 8, 1), sge(0x2000, 8, 1)];
    let empty = [sge(0x1000, 0, 1)];
    for payload in [Payload::Sges(&two), Payload::Sges(&empty), Payload::Inline(b"x")] {
        let err = sq.q.post(&[SendWr::new(1, SendOp::BindMw(bind), payload)], &model).unwrap_err();
        assert_eq!(err.reason, PostErrorReason::BadBind);
        assert!(err.to_string().contains("one non-empty scatter entry"), "{err}");
    }
    assert_eq!(sq.db.be32(4), 8, "nothing more posted");
}

#[test]
fn a_bind_completion_reports_bind_mw() {
    let sq = send_queue(16, 0x108, 0);
    let mut c = cq(4);
    let model = Recorder::default();
    c.cq.attachments().attach(5, completions_of(&sq, 0x108));
    let mut out = [WorkCompletion::default(); 2];
    c.cq.poll(&mut out, &model);
    write_cqe(&mut c, 0, 0, 5, (0x25 << 24) | 0x108, 0, 0, 0, 0);
    write_cqe(&mut c, 1, 13, 5, (0x25 << 24) | 0x108, 3, 0, 0, 0x06);
    assert_eq!(c.cq.poll(&mut out, &model), 2);
    assert_eq!((out[0].opcode, out[0].status), (WcOpcode::BindMw, WcStatus::Success));
    assert_eq!((out[1].opcode, out[1].status), (WcOpcode::BindMw, WcStatus::MwBind));
}

#[test]
fn a_raw_receive_queue_never_writes_more_segments_than_its_entries_hold() {
    // One 16-byte entry (room for one data segment), a geometry that claims two: the
    // constructor's contract (memory mapped and lent) holds, so the safe post must not
    // write a second segment past the entry, here past the ring.
    let mut mem = Mem::new(128);
    let ring = mem.ptr();
    // SAFETY: the memory outlives the queue; the ring is its first 16 bytes.
    let mut q = unsafe {
        RecvQueue::new(RecvGeometry {
            ring,
            wqe_cnt: 1,
            wqe_shift: 4,
            max_sge: 2,
            // SAFETY: inside `mem`, after the ring.
            dbrec_rq: ring.add(64),
        })
    };
    let s = [sge(0x1000, 8, 0x11), sge(0x2000, 8, 0x22)];
    let e = q.post(&[RecvWr { wr_id: 1, sges: &s }]).unwrap_err();
    assert_eq!(e.reason, PostErrorReason::TooManySges { given: 2, max: 1 });
    assert_eq!(mem.bytes(16, 16), [0; 16], "nothing written past the entry");
    q.post(&[RecvWr { wr_id: 2, sges: &s[..1] }]).unwrap();
}

#[test]
fn a_raw_srq_never_writes_more_segments_than_its_entries_hold() {
    // Two 32-byte entries: a next segment and room for one data segment each; a geometry
    // that claims three.
    let mut mem = Mem::new(128);
    let ring = mem.ptr();
    // SAFETY: the memory outlives the ring; the entries are its first 64 bytes.
    let srq = unsafe {
        crate::srq_ring::SrqRing::new(crate::srq_ring::SrqGeometry {
            ring,
            wqe_cnt: 2,
            wqe_shift: 5,
            max_sge: 3,
            // SAFETY: inside `mem`, after the entries.
            dbrec: ring.add(96),
        })
    };
    let s = [sge(0x1000, 8, 0x11), sge(0x2000, 8, 0x22), sge(0x3000, 8, 0x33)];
    let e = srq.post(&[RecvWr { wr_id: 1, sges: &s }]).unwrap_err();
    assert_eq!(e.reason, PostErrorReason::TooManySges { given: 3, max: 1 });
    assert_eq!(mem.bytes(32, 32), [0; 32], "the second entry (next index 0) is untouched");
    srq.post(&[RecvWr { wr_id: 2, sges: &s[..1] }]).unwrap();
}

#[test]
fn a_blueflame_copy_stays_inside_a_register_whose_half_is_not_whole_blocks() {
    // Halves of 96 bytes (192 writable, BlueFlame::new's contract): a 5-segment WQE
    // (80 bytes, 2 blocks of 64) must not be copied 128 bytes deep into the second half.
    let mut sq = send_queue(16, 0x108, 96);
    // Old WQEs' bytes in the ring, behind the new WQEs' last segments.
    // SAFETY: the ring's 16 blocks.
    unsafe { sq.ring.ptr().write_bytes(0, &[0xee; 16 * 64]) };
    let model = Recorder::default();
    let s = [sge(0x1000, 8, 1), sge(0x2000, 8, 2), sge(0x3000, 8, 3)];
    let remote = Remote { addr: 0x9000, rkey: 7 };
    for wr_id in 0..2 {
        let wr = SendWr::new(wr_id, SendOp::RdmaWrite(remote), Payload::Sges(&s));
        sq.q.post(&[wr], &model).unwrap();
    }
    assert_eq!(model.rung.borrow().len(), 2);
    assert_eq!(sq.uar.bytes(0xa00 + 192, 64), [0; 64], "nothing past the register");
}

/// Random posts (every path, batches, binds) and completions against a model of the two
/// limits: a post is taken exactly when fewer than `max_post` requests are in flight and
/// its blocks fit, and the fence after a bind reaches the next request only.
#[test]
fn random_posts_and_completions_keep_to_max_post_and_the_ring() {
    use crate::mr::Access;
    use crate::mw::MwBind;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let s1 = [sge(0x1000, 8, 1)];
    let s2 = [sge(0x1000, 8, 1); 2];
    let s4 = [sge(0x1000, 8, 1); 4];
    let in20 = [7u8; 20];
    let in60 = [7u8; 60];
    let remote = Remote { addr: 0x2000, rkey: 1 };
    let bind = MwBind { window_key: 0x100, new_key: 0x101, access: Access::REMOTE_READ };
    // (request, blocks it takes, is a bind)
    let kinds = |id: u64, k: u64| -> (SendWr<'_, '_>, u32, bool) {
        match k {
            0 => (SendWr::new(id, SendOp::Send, Payload::Sges(&s1)), 1, false),
            1 => (SendWr::new(id, SendOp::RdmaWrite(remote), Payload::Sges(&s1)), 1, false),
            2 => (SendWr::new(id, SendOp::Send, Payload::Sges(&s2)), 1, false),
            3 => (SendWr::new(id, SendOp::Send, Payload::Inline(&in20)), 1, false),
            4 => (SendWr::new(id, SendOp::Nop, Payload::EMPTY), 1, false),
            5 => {
                (SendWr::new(id, SendOp::FetchAdd { remote, add: 1 }, Payload::Sges(&s1)), 1, false)
            }
            6 => (SendWr::new(id, SendOp::RdmaWrite(remote), Payload::Sges(&s4)), 2, false),
            7 => (SendWr::new(id, SendOp::Send, Payload::Inline(&in60)), 2, false),
            8 => (SendWr::new(id, SendOp::BindMw(bind), Payload::Sges(&s1)), 3, true),
            9 => (SendWr::new(id, SendOp::BindMw(bind), Payload::EMPTY), 2, true),
            _ => (SendWr::new(id, SendOp::Send, Payload::Inline(&in20)), 1, false),
        }
    };
    let mut next_id = 1u64;
    for case in 0..300u32 {
        let wqe_cnt = 1u32 << (1 + rnd(5));
        let max_post = 1 + rnd(u64::from(wqe_cnt)) as u32;
        let mut sq = send_queue_with(wqe_cnt, 1, [0, 256][rnd(2) as usize], false, max_post);
        let mut model = Recorder::default();
        // In flight: (first block, blocks, wr_id).
        let mut flight = std::collections::VecDeque::<(u32, u32, u64)>::new();
        let (mut cur, mut retired) = (0u32, 0u32);
        let mut fence = false;
        let kinds_here = if rnd(4) == 0 { 6 } else { 11 };
        for step in 0..1000u32 {
            if step % 64 == 0 {
                model = Recorder::default();
            }
            if !flight.is_empty() && rnd(3) == 0 {
                let k = rnd(flight.len() as u64) as usize;
                let (first, blocks, id) = flight[k];
                assert_eq!(sq.q.tracker().complete(first as u16), id, "case {case}");
                flight.drain(..=k);
                retired = first.wrapping_add(blocks);
            }
            let most = if rnd(2) == 0 { 1 } else { 5 };
            let n = 1 + rnd(most);
            let mut wrs = Vec::new();
            let mut meta = Vec::new();
            for _ in 0..n {
                let (mut wr, blocks, is_bind) = kinds(next_id, rnd(kinds_here));
                next_id += 1;
                wr = wr.flags(
                    [SendFlags::SIGNALED, SendFlags::NONE, SendFlags::FENCE][rnd(3) as usize],
                );
                wrs.push(wr);
                meta.push((blocks, is_bind));
            }
            let mut expect_refused = None;
            let mut posted = Vec::new();
            for (i, &(blocks, is_bind)) in meta.iter().enumerate() {
                let in_flight = flight.len() as u32 + posted.len() as u32;
                let blocks_used = cur.wrapping_sub(retired);
                if in_flight >= max_post || blocks_used + blocks > wqe_cnt {
                    expect_refused = Some(i);
                    break;
                }
                posted.push((cur, blocks, wrs[i].wr_id, fence, wrs[i].flags));
                fence = is_bind;
                cur = cur.wrapping_add(blocks);
            }
            let got = sq.q.post(&wrs, &model);
            let ctx = format!(
                "case {case} step {step}: wqe_cnt {wqe_cnt} max_post {max_post}, {} in flight \
                 in {} blocks, batch {meta:?}",
                flight.len(),
                cur.wrapping_sub(retired)
            );
            match (expect_refused, got) {
                (None, Ok(())) => {}
                (Some(i), Err(e)) => {
                    assert_eq!(e.index, i, "{ctx}: {e}");
                    assert!(matches!(e.reason, PostErrorReason::QueueFull { .. }), "{ctx}: {e}");
                }
                (want, got) => panic!("{ctx}: expected refusal at {want:?}, got {got:?}"),
            }
            assert_eq!(sq.db.be32(4), cur & 0xffff, "{ctx}");
            for (first, blocks, id, fenced, flags) in posted {
                let at = ((first & (wqe_cnt - 1)) * 64) as usize;
                let ctrl = sq.ring.bytes(at, 12);
                assert_eq!(u16::from_be_bytes([ctrl[1], ctrl[2]]), first as u16, "{ctx}");
                let want_fence = if flags.contains(SendFlags::FENCE) {
                    0x80
                } else if fenced {
                    0x20
                } else {
                    0
                };
                assert_eq!(ctrl[11] & 0xa0, want_fence, "{ctx}: fence of wr {id}");
                flight.push_back((first, blocks, id));
            }
            assert!(flight.len() as u32 <= max_post && cur.wrapping_sub(retired) <= wqe_cnt);
        }
    }
}

/// The fast path's allowance (`retired_seen`) must not come back to life when the general
/// builder alone has moved `cur_post` on by 2^32 blocks: a queue posting only NOPs or
/// atomics for a while, then a SEND, must still see the queue full.
#[test]
fn the_fast_paths_allowance_does_not_return_after_2_to_the_32_builder_blocks() {
    let mut sq = send_queue_with(64, 1, 256, false, 64);
    let model = Recorder::default();
    // 2^32 - 64 blocks through the general builder, all retired.
    sq.q.posted_and_retired_by_the_builders((1 << 26) - 1, 64);
    // 64 unsignalled NOPs (the general builder) fill the ring, to 2^32.
    let nops: Vec<SendWr> = (0..64)
        .map(|i| SendWr::new(i, SendOp::Nop, Payload::EMPTY).flags(SendFlags::NONE))
        .collect();
    sq.q.post(&nops, &model).unwrap();
    assert_eq!(sq.q.free_blocks(), 0);
    // The fast path and the one-block path are refused: nothing overwritten.
    let s = [sge(0x1000, 8, 1)];
    let err = sq.q.post(&[SendWr::new(70, SendOp::Send, Payload::Sges(&s))], &model).unwrap_err();
    assert!(matches!(err.reason, PostErrorReason::QueueFull { capacity: 64 }), "{err}");
    let two = [sge(0x1000, 8, 1); 2];
    let err = sq.q.post(&[SendWr::new(71, SendOp::Send, Payload::Sges(&two))], &model).unwrap_err();
    assert!(matches!(err.reason, PostErrorReason::QueueFull { capacity: 64 }), "{err}");
    assert_eq!(sq.db.be32(4), 0, "the counter's 16 bits at 2^32");
    assert_eq!(sq.ring.bytes(0, 4), [0, 0xff, 0xc0, 0], "NOP 0 (at 2^32 - 64) in block 0");
    // One completion for the last NOP frees the ring for the fast path again.
    assert_eq!(sq.q.tracker().complete(0xffff), 63);
    sq.q.post(&[SendWr::new(72, SendOp::Send, Payload::Sges(&s))], &model).unwrap();
    assert_eq!(sq.db.be32(4), 1);
}

/// The block limit never bites before `max_post` on a send queue sized as `Qp::new` sizes
/// it: every WQE the builders make (the most gather entries, the most inline bytes, an
/// atomic, a memory-window bind) is at most `wqe_cnt / max_post` blocks, so `max_post`
/// of the largest fit, and the next is refused for the request count.
#[test]
fn max_post_of_the_largest_wqes_fit_a_ring_sized_as_qp_new_sizes_it() {
    use crate::mr::Access;
    use crate::mw::MwBind;
    use crate::qp::{QpCaps, sq_size};
    let model = Recorder::default();
    let remote = Remote { addr: 0x2000, rkey: 1 };
    let bind = MwBind { window_key: 0x100, new_key: 0x101, access: Access::REMOTE_READ };
    let entries = [sge(0x1000, 8, 1); 20];
    let bytes = [7u8; 320];
    for max_send_wr in [1, 2, 3, 5, 7, 8, 13, 100] {
        for max_send_sge in [0, 1, 2, 3, 4, 5, 8, 12] {
            for max_inline_data in [0, 1, 12, 28, 44, 60, 100, 124, 200, 316] {
                let caps =
                    QpCaps { max_send_wr, max_send_sge, max_inline_data, ..Default::default() };
                let Ok((wqe, wqe_cnt, max_post, max_inline, max_sge)) =
                    sq_size(&caps, 512, 1 << 15)
                else {
                    continue;
                };
                assert!(max_post >= max_send_wr && (wqe / 64) as u32 * max_post <= wqe_cnt);
                let mut ring = Mem::new(wqe_cnt as usize * 64);
                let mut db = Mem::new(64);
                let mut uar = Mem::new(4096);
                let g = SendGeometry {
                    ring: ring.ptr(),
                    wqe_cnt,
                    qpn: 1,
                    max_inline,
                    max_sge,
                    sig_all: false,
                    max_post,
                    // SAFETY: word 1 of the 64-byte record.
                    dbrec_sq: unsafe { db.ptr().add(4) },
                    absent: false,
                };
                // SAFETY: as in send_queue_with.
                let bf = unsafe { BlueFlame::new(uar.ptr().add(0xa00), 256, 6, 0xa00) };
                // SAFETY: the memory outlives the queue (declared before it).
                let mut q = unsafe { SendQueue::new(g, bf) };
                let gather = &entries[..max_sge as usize];
                let inline = &bytes[..max_inline as usize];
                let atomic = [sge(0x1000, 8, 1)];
                let region = [sge(0x1000, 0x1000, 1)];
                let from_memory = [sge(bytes.as_ptr() as u64, max_inline.max(1), 1)];
                let mut kinds = vec![(SendOp::BindMw(bind), Payload::Sges(&region))];
                if max_sge > 0 {
                    let cas = SendOp::CompareSwap { remote, compare: 1, swap: 2 };
                    kinds.push((cas, Payload::Sges(&atomic)));
                    kinds.push((SendOp::RdmaWrite(remote), Payload::Sges(gather)));
                }
                if max_inline > 0 {
                    kinds.push((SendOp::RdmaWrite(remote), Payload::Inline(inline)));
                    kinds.push((SendOp::Send, Payload::InlineSges(&from_memory)));
                }
                for (op, payload) in kinds {
                    let ctx = format!("{caps:?}: {wqe}-byte slots, {wqe_cnt} blocks, {op:?}");
                    let wrs: Vec<SendWr> =
                        (0..max_post).map(|i| SendWr::new(u64::from(i), op, payload)).collect();
                    let before = db.be32(4);
                    q.post(&wrs, &model).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    let err = q.post(&wrs[..1], &model).unwrap_err();
                    assert!(matches!(err.reason, PostErrorReason::QueueFull { .. }), "{ctx}");
                    // One completion for the last retires them all.
                    let after = db.be32(4);
                    let last = after.wrapping_sub(after.wrapping_sub(before) / max_post);
                    assert_eq!(q.tracker().complete(last as u16), u64::from(max_post - 1));
                }
            }
        }
    }
}

/// A CQ whose poller meets no entry (nothing completes there, or nobody polls it) keeps no
/// QP that attached and detached meanwhile: the two changes cancel out when the QP left
/// nothing in the ring (before, each such QP's completions stayed queued for the CQ's
/// life: 3 KiB a DAT connection). A QP with an entry still in the ring keeps its detach
/// queued, so the entry is skipped, and the next QP under the same index is reported.
#[test]
fn an_attach_and_detach_the_poller_never_saw_cancel_out() {
    let sq = send_queue(16, 1, 0);
    let mut c = cq(8);
    let model = Recorder::default();
    let qp = |qpn| completions_of(&sq, qpn);
    for qpn in 0x100..0x110 {
        let gone = qp(qpn);
        c.cq.attachments().attach(3, gone.clone());
        c.cq.attachments().detach(3, &gone, 0, false);
        assert_eq!(Arc::strong_count(&gone), 1, "QP {qpn:#x}: nothing else holds it");
    }
    // One that completed something the poller has not seen: its detach waits for it.
    let busy = qp(0x200);
    c.cq.attachments().attach(3, busy.clone());
    write_cqe(&mut c, 0, 0, 3, 0x200, 0, 0, 0, 0);
    // SAFETY: the CQ's ring of 8 entries, software's from 0 on.
    let (end, in_ring) = unsafe {
        let ring = c.ring.ptr();
        let end = crate::cq_ring::software_end(ring, 8, 0);
        (end, crate::cq_ring::holds_entries_of(ring, 8, 0, end, 3))
    };
    assert!(in_ring, "entry 0 is the QP's");
    // SAFETY: as above.
    assert!(!unsafe { crate::cq_ring::holds_entries_of(c.ring.ptr(), 8, 0, end, 4) });
    c.cq.attachments().detach(3, &busy, end, in_ring);
    assert_eq!(Arc::strong_count(&busy), 2, "queued until the poller takes it in");
    c.cq.attachments().attach(3, qp(0x300));
    write_cqe(&mut c, 1, 0, 3, 0x300, 0, 0, 0, 0);
    let mut out = [WorkCompletion::default(); 4];
    assert_eq!(c.cq.poll(&mut out, &model), 1);
    assert_eq!(out[0].qpn, 0x300, "the detached QP's entry skipped, the new QP's reported");
    assert_eq!(Arc::strong_count(&busy), 1, "taken in and let go");
}
