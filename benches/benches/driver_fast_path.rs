//! Instruction counts of the driver's fast path (iai-callgrind): posting and polling as
//! the driver does them on hardware — WQEs built in the ring, doorbell record, BlueFlame
//! copy or doorbell store, CQEs decoded into work completions — over plain memory with the
//! no-op `Hardware` model, so the figures are the driver's own cost and nothing of softhca.
//!
//! `cargo bench -p ferrodat-benches --bench driver_fast_path` (needs valgrind and the
//! iai-callgrind runner; `scripts/install-deps` installs both). Budget (issue 5): at most
//! 120 instructions per single post and 60 per polled CQE.

use ferrodat_driver::completion::WorkCompletion;
use ferrodat_driver::raw::*;
use ferrodat_driver::work_request::{Payload, Remote, SendFlags, SendOp, SendWr, Sge};
use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use std::hint::black_box;
use std::ptr::NonNull;
use std::sync::Arc;

/// 64-byte aligned memory standing in for what the driver lends the device.
struct Mem(Box<[[u64; 8]]>);

impl Mem {
    fn new(bytes: usize) -> Mem {
        Mem(vec![[0u64; 8]; bytes.div_ceil(64)].into_boxed_slice())
    }
    fn ptr(&mut self) -> DevPtr {
        // SAFETY: every Mem lives in the same struct as the queue using it.
        unsafe { DevPtr::new(NonNull::new(self.0.as_mut_ptr().cast::<u8>()).unwrap()) }
    }
}

const QPN: u32 = 0x108;
const WQE_CNT: u32 = 1024;

struct SendSide {
    _ring: Mem,
    _db: Mem,
    _uar: Mem,
    _data: Vec<u8>,
    sq: SendQueue,
    sge: [Sge<'static>; 1],
}

fn send_side() -> Box<SendSide> {
    let mut ring = Mem::new(WQE_CNT as usize * 64);
    let mut db = Mem::new(64);
    let mut uar = Mem::new(4096);
    let mut data = vec![0u8; 4096];
    let g = SendGeometry {
        ring: ring.ptr(),
        wqe_cnt: WQE_CNT,
        qpn: QPN,
        max_inline: 60,
        max_sge: 16,
        sig_all: false,
        max_post: WQE_CNT,
        // SAFETY: word 1 of the doorbell record.
        dbrec_sq: unsafe { db.ptr().add(4) },
        absent: false,
    };
    // SAFETY: bfreg 1 (0xa00) of the UAR page, 256-byte halves, inside the 4 KiB page.
    let bf = unsafe { BlueFlame::new(uar.ptr().add(0xa00), 256, 0, 0xa00) };
    // SAFETY: the memory lives next to the queue.
    let sq = unsafe { SendQueue::new(g, bf) };
    // SAFETY: `data` lives next to the queue; nothing reads it through a reference.
    let sge = [unsafe { Sge::from_raw(data.as_mut_ptr() as u64, 4096, 0x1234) }];
    Box::new(SendSide { _ring: ring, _db: db, _uar: uar, _data: data, sq, sge })
}

/// A send queue and the work requests one benchmark posts, both built outside the
/// measurement (the WRs live on the heap, so handing them over copies one pointer).
type Posting<const N: usize> = (Box<SendSide>, Box<[SendWr<'static, 'static>; N]>);

/// The send side's SGE, for WRs that must borrow it for 'static (the side is leaked with it
/// in the benchmark process, which exits right after).
fn static_sge(s: &SendSide) -> &'static [Sge<'static>] {
    Box::leak(Box::new(s.sge))
}

fn one_send() -> Posting<1> {
    let s = send_side();
    let wr = SendWr::new(1, SendOp::Send, Payload::Sges(static_sge(&s)));
    (s, Box::new([wr]))
}

fn one_inline_send() -> Posting<1> {
    let s = send_side();
    let wr = SendWr::new(1, SendOp::Send, Payload::Inline(&[0xa5; 8]));
    (s, Box::new([wr]))
}

/// Sixteen RDMA WRITEs of 4 KiB, the last one signalled.
fn sixteen_writes() -> Posting<16> {
    let s = send_side();
    let remote = Remote { addr: 0x7000_0000, rkey: 0x55 };
    let mut wrs = [SendWr::new(0, SendOp::RdmaWrite(remote), Payload::Sges(static_sge(&s))); 16];
    for (i, wr) in wrs.iter_mut().enumerate() {
        wr.wr_id = i as u64;
        wr.flags = if i == 15 { SendFlags::SIGNALED } else { SendFlags::NONE };
    }
    (s, Box::new(wrs))
}

#[library_benchmark]
#[bench::one(setup = one_send)]
fn post_send_1_sge((mut s, wrs): Posting<1>) -> Posting<1> {
    assert!(black_box(s.sq.post(black_box(&wrs[..]), &Hardware).is_ok()));
    (s, wrs) // dropped outside the measurement
}

#[library_benchmark]
#[bench::one(setup = one_inline_send)]
fn post_inline_8_bytes((mut s, wrs): Posting<1>) -> Posting<1> {
    assert!(black_box(s.sq.post(black_box(&wrs[..]), &Hardware).is_ok()));
    (s, wrs) // dropped outside the measurement
}

#[library_benchmark]
#[bench::sixteen(setup = sixteen_writes)]
fn post_16_rdma_writes((mut s, wrs): Posting<16>) -> Posting<16> {
    assert!(black_box(s.sq.post(black_box(&wrs[..]), &Hardware).is_ok()));
    (s, wrs) // dropped outside the measurement
}

struct PollSide {
    _ring: Mem,
    _db: Mem,
    _uar: Mem,
    send: Box<SendSide>,
    cq: CqRing,
    out: [WorkCompletion; 16],
}

/// A CQ holding `n` requester CQEs for `n` posted SENDs of QP `QPN` (user index 1).
fn poll_side(n: u32) -> Box<PollSide> {
    let ncqe = 256;
    let mut ring = Mem::new(ncqe * 64);
    let mut db = Mem::new(64);
    let mut uar = Mem::new(4096);
    let mut send = send_side();
    let g = CqGeometry { ring: ring.ptr(), ncqe: ncqe as u32, dbrec: db.ptr(), cqn: 0x40 };
    // SAFETY: the memory lives next to the ring; the UAR page is 4 KiB.
    let mut cq = unsafe { CqRing::new(g, CqDoorbell::new(uar.ptr(), 0)) };
    let qp = QpCompletions::new(
        QPN,
        send.sq.tracker().clone(),
        RecvSource::Queue(Arc::new(RecvTracker::new(64))),
    );
    cq.attachments().attach(1, Arc::new(qp));
    let p = ring.ptr();
    for i in 0..ncqe {
        // SAFETY: op_own of entry i: invalid, owned by hardware.
        unsafe { p.write_u8(i * 64 + 63, 0xf0) };
    }
    let mut out = [WorkCompletion::default(); 16];
    cq.poll(&mut out, &Hardware); // takes the attachment in, outside the measurement
    for i in 0..n {
        let wr = SendWr::new(u64::from(i), SendOp::Send, Payload::Sges(&send.sge));
        send.sq.post(&[wr], &Hardware).unwrap();
        let base = i as usize * 64;
        // SAFETY: fields of entry i, written as the device writes a requester CQE.
        unsafe {
            p.write_u32(base + 32, 1u32.to_be());
            p.write_u32(base + 56, ((0x0a << 24) | QPN).to_be());
            p.write_u16(base + 60, (i as u16).to_be());
            p.write_u8(base + 63, 0x00);
        }
    }
    Box::new(PollSide { _ring: ring, _db: db, _uar: uar, send, cq, out })
}

fn one_cqe() -> Box<PollSide> {
    poll_side(1)
}

fn sixteen_cqes() -> Box<PollSide> {
    poll_side(16)
}

#[library_benchmark]
#[bench::one(setup = one_cqe)]
fn poll_1_cqe(p: Box<PollSide>) {
    // The one-at-a-time entry point (what an EVD dequeue calls), inlined here as in any
    // caller. Its volatile reads and stores cannot be optimised away, so no black_box is
    // needed around it. The setup is leaked rather than returned: a returned Box stays
    // live across the poll's out-of-line call, and the registers saved for it (9
    // instructions) are the harness's, which a caller polling in a loop does not pay.
    let PollSide { cq, out, .. } = Box::leak(p);
    assert!(cq.poll_one(&mut out[0], &Hardware));
}

#[library_benchmark]
#[bench::sixteen(setup = sixteen_cqes)]
fn poll_16_cqes(mut p: Box<PollSide>) -> Box<PollSide> {
    let n = p.cq.poll(black_box(&mut p.out), &Hardware);
    assert_eq!(black_box(n), 16);
    let _ = &p.send;
    p
}

library_benchmark_group!(
    name = post;
    benchmarks = post_send_1_sge, post_inline_8_bytes, post_16_rdma_writes
);
library_benchmark_group!(
    name = poll;
    benchmarks = poll_1_cqe, poll_16_cqes
);
main!(library_benchmark_groups = post, poll);
