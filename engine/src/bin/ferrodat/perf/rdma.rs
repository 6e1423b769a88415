//! The driver-level rows: one RC QP per side, posted to and polled through the ferrodat
//! driver directly (no DAT objects), both sides busy-polling.
//!
//! Each side registers one buffer, a memfd mapped shared (`Pd::alloc_mr_shared`): over
//! softhca the peer places RDMA WRITEs of 4 KiB and more straight into it, as a real HCA
//! writes any registered memory (private memory would take softhca's ring, two copies):
//!
//! | offset | length | use |
//! |---|---|---|
//! | [`RECV_OFF`] | 64 × 4 KiB | receive slots, reposted as they complete |
//! | [`SRC_OFF`] | 1 MiB | SEND and RDMA WRITE source, RDMA READ destination |
//! | [`DST_OFF`] | 1 MiB | RDMA WRITE target of the stream, RDMA READ source |
//! | [`LAT_OFF`] | 4 KiB | RDMA WRITE ping-pong landing area |
//!
//! How each test runs (the client drives, the server answers; see [`Job`]):
//!
//! - SEND/RECV ping-pong: the client SENDs, the server polls its CQ for the receive and
//!   SENDs the same size back; half the round trip. Up to the inline limit the data is
//!   inline, above it gathered from the buffer.
//! - RDMA WRITE ping-pong (perftest's `ib_write_lat`): each side RDMA WRITEs a sequence
//!   number into the last 8 bytes of the other's landing area and polls its own landing
//!   area for the answer; half the round trip. The poller also polls its CQ while it waits:
//!   on hardware that costs one look at an empty CQ, on softhca it is what moves the
//!   incoming write (softhca does the HCA's work on the threads that poll).
//! - RDMA READ: one READ at a time from the server's buffer, the whole round trip (as
//!   `ib_read_lat` reports it); the server only polls.
//! - RDMA WRITE stream: [`WINDOW`] signalled WRITEs outstanding, a new one posted as each
//!   completes; bytes over the time from the first post to the last completion. Over
//!   softhca the WRITEs are placed into the server's buffer by the client itself.
//!
//! The end of a test is in band: a SEND with immediate data [`STOP_IMM`] (or, for the
//! WRITE ping-pong, the value `u64::MAX` written), after which the server says DONE on the
//! control connection.

use super::control::{Control, Job, QpInfo};
use super::workload::{Counts, PerfSide};
use ferrodat_driver::completion::{WcOpcode, WorkCompletion};
use ferrodat_driver::work_request::{
    Payload, PostErrorReason, RecvWr, Remote, SendFlags, SendOp, SendWr, Sge,
};
use ferrodat_driver::{Access, Context, Cq, CqOptions, MrBuf, Pd, Qp, QpCaps, QpInit};
use ferrodat_engine::cm::{connect_qp, local_conn_info};
use std::time::{Duration, Instant};

/// Receive slots and their size.
pub const RECV_SLOTS: u64 = 64;
pub const RECV_SLOT: usize = 4096;
/// The buffer's areas (see the module docs).
pub const RECV_OFF: usize = 0;
pub const SRC_OFF: usize = RECV_OFF + RECV_SLOTS as usize * RECV_SLOT;
pub const DST_OFF: usize = SRC_OFF + MAX_MESSAGE;
pub const LAT_OFF: usize = DST_OFF + MAX_MESSAGE;
pub const LAT_LEN: usize = 4096;
pub const MR_LEN: usize = LAT_OFF + LAT_LEN;
/// Largest RDMA WRITE/READ message.
pub const MAX_MESSAGE: usize = 1 << 20;
/// Outstanding WRITEs of the stream.
pub const WINDOW: u64 = 16;
/// An unsignalled send is followed by a signalled one at least this often, so the send
/// queue's entries are retired.
pub const SIGNAL_EVERY: u64 = 32;
/// Immediate data of the SEND that ends a test.
pub const STOP_IMM: u32 = u32::from_be_bytes(*b"STOP");
/// The value the WRITE ping-pong's client writes to end it.
pub const STOP_SEQ: u64 = u64::MAX;
/// How long a side waits for something the peer should do before giving up.
pub const STALL: Duration = Duration::from_secs(10);

/// The device context and protection domain of one side.
pub struct Resources {
    ctx: Context,
    pd: Pd,
    device: String,
}

impl Resources {
    /// Opens `device`.
    pub fn open(device: &str) -> Result<Resources, String> {
        let ctx = ferrodat_driver::open(device).map_err(|e| format!("opening {device}: {e}"))?;
        let pd = Pd::new(&ctx).map_err(|e| format!("{device}: {e}"))?;
        Ok(Resources { ctx, pd, device: device.to_string() })
    }

    /// The buffer both sides' tests use (see the module docs).
    pub fn alloc_mr(&self) -> Result<MrBuf, String> {
        self.pd
            .alloc_mr_shared(MR_LEN, Access::ALL)
            .map_err(|e| format!("{}: registering the {MR_LEN}-byte test buffer: {e}", self.device))
    }
}

/// One side's CQ, QP and buffer, with what its completions said so far.
pub struct Side<'m> {
    cq: Cq,
    qp: Qp<'m>,
    mr: &'m MrBuf,
    info: QpInfo,
    peer: Option<QpInfo>,
    inline_max: usize,
    wc: [WorkCompletion; 16],
    /// What the completions said (`stopped`: a receive carried [`STOP_IMM`]).
    counts: Counts,
}

impl<'m> Side<'m> {
    /// A CQ and an RC QP on `res`, with `mr` as the test buffer.
    pub fn new(res: &Resources, mr: &'m MrBuf) -> Result<Side<'m>, String> {
        let dev = &res.device;
        let cq = Cq::new(&res.ctx, &CqOptions { cqe: 1024, ..Default::default() })
            .map_err(|e| format!("{dev}: creating the CQ: {e}"))?;
        let caps = QpCaps {
            max_send_wr: 256,
            max_recv_wr: RECV_SLOTS as u32,
            max_inline_data: 60,
            ..Default::default()
        };
        let init = QpInit::new(&cq, &cq, caps);
        let qp = Qp::new(&res.pd, &init).map_err(|e| format!("{dev}: creating the QP: {e}"))?;
        let conn = local_conn_info(&res.ctx, &qp, 16, 16)
            .map_err(|e| format!("{dev}: port 1 and GID for the QP: {e}"))?;
        let inline_max = qp.caps().max_inline_data as usize;
        Ok(Side {
            cq,
            qp,
            mr,
            info: QpInfo { conn, addr: mr.addr(), rkey: mr.rkey() },
            peer: None,
            inline_max,
            wc: [WorkCompletion::default(); 16],
            counts: Counts::default(),
        })
    }

    /// What the peer needs to know about this side.
    pub fn local_info(&self) -> QpInfo {
        self.info
    }

    /// Brings the QP up towards `peer` and posts the receives.
    pub fn connect(&mut self, peer: &QpInfo) -> Result<QpInfo, String> {
        connect_qp(&mut self.qp, &self.info.conn, &peer.conn, Access::ALL)
            .map_err(|e| format!("connecting the QP to the peer's QP {:#x}: {e}", peer.conn.qpn))?;
        for slot in 0..RECV_SLOTS {
            self.post_recv(slot)?;
        }
        self.peer = Some(*peer);
        Ok(self.info)
    }

    fn post_recv(&mut self, slot: u64) -> Result<(), String> {
        let sge = [self
            .mr
            .sge(RECV_OFF + slot as usize * RECV_SLOT, RECV_SLOT)
            .map_err(|e| e.to_string())?];
        self.qp
            .post_recv(&[RecvWr { wr_id: slot, sges: &sge }])
            .map_err(|e| format!("reposting a receive: {e}"))
    }

    fn peer(&self) -> Result<QpInfo, String> {
        self.peer.ok_or_else(|| "the QP is not connected".to_string())
    }

    /// Posts one send work request, signalled if `signal` or every [`SIGNAL_EVERY`]th;
    /// a full queue is drained by polling.
    fn post(&mut self, op: SendOp, payload: Payload<'m, '_>, signal: bool) -> Result<(), String> {
        let (id, signal) = self.counts.next_request(signal);
        let flags = if signal { SendFlags::SIGNALED } else { SendFlags::NONE };
        let wr = SendWr::new(id, op, payload).flags(flags);
        let mut since: Option<Instant> = None;
        loop {
            match self.qp.post_send(&[wr]) {
                Ok(()) => break,
                Err(e) if matches!(e.reason, PostErrorReason::QueueFull { .. }) => {
                    if self.pump(false)? == 0
                        && since.get_or_insert_with(Instant::now).elapsed() > STALL
                    {
                        return Err(format!("the send queue stayed full: {e}"));
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        self.counts.posted_request(signal);
        Ok(())
    }
}

impl<'m> PerfSide for Side<'m> {
    /// The source area's entry and the peer's target area.
    type Transfer = ([Sge<'m>; 1], Remote);

    fn start_job(ctl: &mut Control, job: Job) -> Result<(), String> {
        ctl.start_job(job)
    }

    fn counts(&self) -> &Counts {
        &self.counts
    }

    fn counts_mut(&mut self) -> &mut Counts {
        &mut self.counts
    }

    /// Polls the CQ once (receives and requests complete there alike, so `recv` makes no
    /// difference).
    fn pump(&mut self, _recv: bool) -> Result<usize, String> {
        let n = self.cq.poll(&mut self.wc);
        for i in 0..n {
            let w = self.wc[i];
            if !w.is_ok() {
                return Err(format!(
                    "a work request failed: {:?} on QP {:#x}, status {:?}, syndrome {:?}: the \
                     peer may have exited or reset its QP (see its output)",
                    w.opcode,
                    w.qpn,
                    w.status,
                    w.syndrome()
                ));
            }
            match w.opcode {
                WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => {
                    self.post_recv(w.wr_id)?;
                    self.counts.received(w.imm() == Some(STOP_IMM));
                }
                op => self.counts.request_done(op == WcOpcode::RdmaRead),
            }
        }
        Ok(n)
    }

    /// A SEND of `size` bytes: inline up to the QP's limit, else from the source area.
    fn send(&mut self, size: usize) -> Result<(), String> {
        const FILL: [u8; 64] = [0xa5; 64];
        if size <= self.inline_max.min(FILL.len()) {
            self.post(SendOp::Send, Payload::Inline(&FILL[..size]), false)
        } else {
            let sge = [self.mr.sge(SRC_OFF, size).map_err(|e| e.to_string())?];
            self.post(SendOp::Send, Payload::Sges(&sge), false)
        }
    }

    /// A SEND with [`STOP_IMM`] and no data.
    fn send_stop(&mut self) -> Result<(), String> {
        self.post(SendOp::SendImm(STOP_IMM), Payload::EMPTY, false)
    }

    fn transfer(&self, size: usize) -> Result<Self::Transfer, String> {
        let peer = self.peer()?;
        let mr = self.mr;
        let sge = [mr.sge(SRC_OFF, size).map_err(|e| e.to_string())?];
        Ok((sge, Remote { addr: peer.addr + DST_OFF as u64, rkey: peer.rkey }))
    }

    fn post_read(&mut self, (sge, remote): &Self::Transfer) -> Result<(), String> {
        self.post(SendOp::RdmaRead(*remote), Payload::Sges(sge), true)
    }

    fn post_write(&mut self, (sge, remote): &Self::Transfer) -> Result<(), String> {
        self.post(SendOp::RdmaWrite(*remote), Payload::Sges(sge), true)
    }

    /// The sizes the WRITE ping-pong takes: a sequence number fits, and the message is
    /// inline (so no buffer is reused while the device may still read it).
    fn write_lat_size(&self, size: usize) -> Result<(), String> {
        let max = self.inline_max.min(64);
        if !(8..=max).contains(&size) {
            return Err(format!(
                "RDMA WRITE ping-pong of {size} bytes: this QP takes 8 to {max} (inline)"
            ));
        }
        Ok(())
    }

    fn clear_landing(&mut self) -> Result<(), String> {
        self.mr.write(LAT_OFF, &[0; LAT_LEN]).map_err(|e| e.to_string())
    }

    fn write_seq(&mut self, size: usize, seq: u64) -> Result<(), String> {
        let peer = self.peer()?;
        let mut msg = [0u8; 64];
        msg[size - 8..size].copy_from_slice(&seq.to_le_bytes());
        let remote = Remote { addr: peer.addr + LAT_OFF as u64, rkey: peer.rkey };
        self.post(SendOp::RdmaWrite(remote), Payload::Inline(&msg[..size]), false)
    }

    fn landed(&self, size: usize) -> u64 {
        let mut v = [0u8; 8];
        // In bounds: write_lat_size checked `size` when the test started.
        match self.mr.read(LAT_OFF + size - 8, &mut v) {
            Ok(()) => u64::from_le_bytes(v),
            Err(_) => 0,
        }
    }
}
