//! The DAT-level rows: the driver-level tests ([`super::rdma`]) again, through the
//! engine's DAT objects — an IA, a PZ, one LMR laid out as the driver level's buffer, an
//! EP with its own request, receive and connection EVDs — posted with `dat_ep_post_*`
//! (`Ep::post_send`, `post_recv`, `post_rdma_write`, `post_rdma_read`) and completed by
//! busy-polling `dat_evd_dequeue` (`Evd::dequeue`, as dtest `-p` does): no `dat_evd_wait`,
//! so no sleeping, as the driver level polls its CQ.
//!
//! The two EPs connect through the engine's connection manager: the server opens a PSP on
//! a connection qualifier derived from its control port ([`conn_quals`]), the client calls
//! `dat_ep_connect` to it; the LMRs' addresses and rmr_contexts travel over the control
//! connection ([`super::control`]'s `DAT` line).
//!
//! Same work as the driver level wherever DAT lets it be the same: sends are posted with
//! `DAT_COMPLETION_SUPPRESS_FLAG` except every [`SIGNAL_EVERY`](super::rdma::SIGNAL_EVERY)th (the driver level's
//! unsignalled sends), READs and stream WRITEs are signalled, receives always complete.
//! What DAT makes different: every DTO names LMR memory (no inline data, so an 8-byte SEND
//! or RDMA WRITE gathers from the LMR), and completions come one event per dequeue from two
//! EVDs (receive and request) instead of up to 16 per poll of one CQ.
//!
//! The end of a test is in band: a SEND of no bytes (a receive of length 0), or for the
//! WRITE ping-pong the value [`STOP_SEQ`](super::rdma::STOP_SEQ) written.

use super::control::{Control, DatInfo, Job};
use super::rdma::{
    DST_OFF, LAT_LEN, LAT_OFF, MR_LEN, RECV_OFF, RECV_SLOT, RECV_SLOTS, SRC_OFF, STALL,
};
use super::workload::{Counts, PerfSide};
use ferrodat_abi::dat::{completion_flags, dto_status, dtos, evd_flags, event, mem_priv, ret};
use ferrodat_engine::dto::DtoCompletion;
use ferrodat_engine::ep::{Ep, EpAttr};
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::{Ia, IaSpec};
use ferrodat_engine::lmr::{Lmr, LmrTriplet, MemPriv, RmrTriplet};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::net::IpAddr;
use std::time::Instant;

/// Requests the EP may have outstanding (the driver level's send queue).
const MAX_REQUESTS: u32 = 256;
/// RDMA READs in flight each way (the driver level's).
const READ_DEPTH: u32 = 16;
/// Connection qualifiers the server tries, from its control port + 1 on.
const CONN_QUAL_TRIES: u16 = 16;

/// `STALL` in the µs `dat_evd_wait` takes.
fn stall_us() -> u32 {
    STALL.as_micros() as u32
}

/// The connection qualifiers a server on control port `port` tries for its PSP, in
/// order: the ports after it (skipping 0 and `port` itself), so the PSP never takes the
/// control port and a second server on another `--port` picks other ones.
pub fn conn_quals(port: u16) -> impl Iterator<Item = u16> {
    (1..=CONN_QUAL_TRIES).map(move |i| port.wrapping_add(i)).filter(move |&q| q != 0 && q != port)
}

/// One side's DAT objects, with what its completions said so far.
pub struct Side {
    ia: Ia,
    lmr: Lmr,
    ep: Ep,
    req_evd: Evd,
    recv_evd: Evd,
    conn_evd: Evd,
    /// The server's PSP and its CR EVD, until the client's request is accepted.
    psp: Option<(Psp, Evd)>,
    /// The peer's LMR.
    peer: Option<(u64, u32)>,
    /// What the completions said (`stopped`: a receive of no bytes came).
    counts: Counts,
}

fn dat(what: &str) -> impl Fn(DatError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl Side {
    /// Opens an IA on port 1 of `device` (its address: the one GID 0 carries), a PZ, the
    /// LMR, the EVDs and the EP, and posts the receives.
    pub fn open(device: &str) -> Result<Side, String> {
        let spec = IaSpec { device: device.to_string(), port: 1, address: None };
        let ia = Ia::open("ferrodat-perf", &spec).map_err(dat("opening a DAT IA"))?;
        let pz = Pz::create(&ia).map_err(dat("dat_pz_create"))?;
        let lmr = Lmr::alloc_shared(&pz, MR_LEN, MemPriv(mem_priv::ALL))
            .map_err(dat(&format!("registering the {MR_LEN}-byte test LMR")))?;
        let evd = |qlen: u32, flags: u32| {
            Evd::create(&ia, qlen, flags).map_err(dat(&format!("dat_evd_create (qlen {qlen})")))
        };
        let req_evd = evd(2 * MAX_REQUESTS, evd_flags::DTO)?;
        let recv_evd = evd(2 * RECV_SLOTS as u32, evd_flags::DTO)?;
        let conn_evd = evd(8, evd_flags::CONNECTION)?;
        let limits = ia.attr();
        let attr = EpAttr {
            max_recv_dtos: RECV_SLOTS as u32,
            max_request_dtos: MAX_REQUESTS,
            max_recv_iov: 1,
            max_request_iov: 1,
            max_rdma_read_in: READ_DEPTH.min(limits.max_rdma_read_per_ep_in),
            max_rdma_read_out: READ_DEPTH.min(limits.max_rdma_read_per_ep_out),
            ..EpAttr::defaults(&ia)
        };
        let ep = Ep::create(&pz, &recv_evd, &req_evd, Some(&conn_evd), Some(attr))
            .map_err(dat("dat_ep_create"))?;
        let side = Side {
            ia,
            lmr,
            ep,
            req_evd,
            recv_evd,
            conn_evd,
            psp: None,
            peer: None,
            counts: Counts::default(),
        };
        for slot in 0..RECV_SLOTS {
            side.post_recv(slot)?;
        }
        Ok(side)
    }

    /// What the peer needs to know about this side's memory.
    pub fn local_info(&self) -> DatInfo {
        DatInfo {
            listen: None,
            addr: self.lmr.registered_address(),
            rmr_context: self.lmr.rmr_context(),
        }
    }

    /// Server: opens the PSP on the first free qualifier of [`conn_quals`]`(port)`;
    /// returns the IA address and the qualifier.
    pub fn listen(&mut self, port: u16) -> Result<(IpAddr, u16), String> {
        let cr_evd = Evd::create(&self.ia, 4, evd_flags::CR).map_err(dat("dat_evd_create (CR)"))?;
        let address = self.ia.attr().address;
        let mut tried = Vec::new();
        for q in conn_quals(port) {
            match Psp::create(&self.ia, q, &cr_evd) {
                Ok(psp) => {
                    self.psp = Some((psp, cr_evd));
                    return Ok((address, q));
                }
                Err(e) if e.return_type() == ret::CONN_QUAL_IN_USE => tried.push(q),
                Err(e) => return Err(format!("dat_psp_create on {address} port {q}: {e}")),
            }
        }
        Err(format!(
            "dat_psp_create: connection qualifiers {tried:?} on {address} are all in use; run the \
             server with another --port (its PSP takes the ports after it)"
        ))
    }

    /// Server: accepts the client's connection request on the PSP and waits until the EP
    /// is connected.
    pub fn accept(&mut self) -> Result<(), String> {
        let (psp, cr_evd) = self.psp.take().ok_or("no PSP to accept a request on")?;
        let (ev, _) = cr_evd.wait(stall_us(), 1).map_err(|e| {
            format!(
                "waiting {} s for the client's dat_ep_connect to port {}: {e}",
                STALL.as_secs(),
                psp.conn_qual()
            )
        })?;
        let Event::ConnectionRequest { cr, .. } = ev else {
            return Err(format!("expected a connection request on the PSP, got {ev:?}"));
        };
        cr.accept(Some(&self.ep), b"").map_err(dat("dat_cr_accept"))?;
        self.established("dat_cr_accept")
    }

    /// Client: connects the EP to the server's PSP at `address`:`conn_qual`.
    pub fn connect(&mut self, address: IpAddr, conn_qual: u16) -> Result<(), String> {
        self.ep
            .connect(address, conn_qual, Some(STALL), b"ferrodat perf")
            .map_err(dat(&format!("dat_ep_connect to {address} port {conn_qual}")))?;
        self.established(&format!("dat_ep_connect to {address} port {conn_qual}"))
    }

    fn established(&self, what: &str) -> Result<(), String> {
        let (ev, _) = self.conn_evd.wait(stall_us(), 1).map_err(|e| {
            format!("{what}: no connection event within {} s: {e}", STALL.as_secs())
        })?;
        match ev {
            Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. } => Ok(()),
            Event::Connection { number, .. } => Err(format!(
                "{what}: connection event {number:#x} instead of ESTABLISHED (the peer's output \
                 may say why)"
            )),
            other => Err(format!("{what}: expected a connection event, got {other:?}")),
        }
    }

    /// Records the peer's LMR.
    pub fn set_peer(&mut self, peer: &DatInfo) {
        self.peer = Some((peer.addr, peer.rmr_context));
    }

    /// Client: a graceful `dat_ep_disconnect`, waiting for DISCONNECTED.
    pub fn disconnect(&self) -> Result<(), String> {
        self.ep.disconnect(DisconnectMode::Graceful).map_err(dat("dat_ep_disconnect"))?;
        let (ev, _) = self.conn_evd.wait(stall_us(), 1).map_err(dat("waiting for DISCONNECTED"))?;
        match ev {
            Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. } => Ok(()),
            other => Err(format!("dat_ep_disconnect: expected DISCONNECTED, got {other:?}")),
        }
    }

    fn triplet(&self, offset: usize, length: usize) -> Result<LmrTriplet, String> {
        self.lmr.triplet(offset as u64, length as u64).map_err(|e| e.to_string())
    }

    fn remote(&self, offset: usize, length: usize) -> Result<RmrTriplet, String> {
        let (addr, rmr_context) = self.peer.ok_or_else(|| "the EP is not connected".to_string())?;
        Ok(RmrTriplet {
            rmr_context,
            virtual_address: addr + offset as u64,
            segment_length: length as u64,
        })
    }

    fn post_recv(&self, slot: u64) -> Result<(), String> {
        let t = self.triplet(RECV_OFF + slot as usize * RECV_SLOT, RECV_SLOT)?;
        self.ep.post_recv(&[t], slot, 0).map_err(dat("reposting a receive (dat_ep_post_recv)"))
    }

    /// Dequeues one event from `evd`; a completion is accounted for (a receive reposted at
    /// once), a failed one is an error. True if there was one.
    fn take(&mut self, recv: bool) -> Result<bool, String> {
        let (evd, which) =
            if recv { (&self.recv_evd, "receive") } else { (&self.req_evd, "request") };
        let c = match evd.dequeue() {
            Ok(Event::Dto { completion, .. }) => completion,
            Ok(other) => return Err(format!("the {which} EVD gave {other:?}, not a DTO event")),
            Err(e) if e.return_type() == ret::QUEUE_EMPTY => return Ok(false),
            Err(e) => return Err(format!("dat_evd_dequeue on the {which} EVD: {e}")),
        };
        self.complete(&c)?;
        Ok(true)
    }

    fn complete(&mut self, c: &DtoCompletion) -> Result<(), String> {
        if c.status != dto_status::SUCCESS {
            return Err(format!(
                "a DTO failed: operation {}, cookie {}, DAT status {}: the peer may have exited \
                 or reset its endpoint (see its output)",
                c.operation, c.user_cookie, c.status
            ));
        }
        match c.operation {
            dtos::RECEIVE => {
                self.post_recv(c.user_cookie)?;
                self.counts.received(c.transfered_length == 0);
            }
            op => self.counts.request_done(op == dtos::RDMA_READ),
        }
        Ok(())
    }

    /// Posts one request with `post(ep, cookie, flags)`: signalled if `signal` or every
    /// [`SIGNAL_EVERY`](super::rdma::SIGNAL_EVERY)th, else suppressed; a full endpoint is drained by dequeuing.
    fn post(
        &mut self,
        signal: bool,
        post: impl Fn(&Ep, u64, u32) -> DatResult<()>,
    ) -> Result<(), String> {
        let (cookie, signal) = self.counts.next_request(signal);
        let flags = if signal { 0 } else { completion_flags::SUPPRESS };
        let mut since: Option<Instant> = None;
        loop {
            match post(&self.ep, cookie, flags) {
                Ok(()) => break,
                Err(e) if e.return_type() == ret::INSUFFICIENT_RESOURCES => {
                    if self.pump(false)? == 0
                        && since.get_or_insert_with(Instant::now).elapsed() > STALL
                    {
                        return Err(format!("the endpoint stayed full: {e}"));
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        self.counts.posted_request(signal);
        Ok(())
    }
}

impl PerfSide for Side {
    /// The source area's triplet and the peer's target area.
    type Transfer = ([LmrTriplet; 1], RmrTriplet);

    fn start_job(ctl: &mut Control, job: Job) -> Result<(), String> {
        ctl.start_dat_job(job)
    }

    fn counts(&self) -> &Counts {
        &self.counts
    }

    fn counts_mut(&mut self) -> &mut Counts {
        &mut self.counts
    }

    /// One look for completions: the receive EVD if `recv`, the request EVD while a
    /// signalled request is outstanding.
    fn pump(&mut self, recv: bool) -> Result<usize, String> {
        let mut n = 0;
        if recv && self.take(true)? {
            n += 1;
        }
        if self.counts.signalled > self.counts.sends_done && self.take(false)? {
            n += 1;
        }
        Ok(n)
    }

    /// A SEND of `size` bytes from the source area.
    fn send(&mut self, size: usize) -> Result<(), String> {
        let local = if size == 0 { Vec::new() } else { vec![self.triplet(SRC_OFF, size)?] };
        self.post(false, |ep, cookie, flags| ep.post_send(&local, cookie, flags))
            .map_err(|e| format!("dat_ep_post_send: {e}"))
    }

    /// A SEND of no bytes.
    fn send_stop(&mut self) -> Result<(), String> {
        self.send(0)
    }

    fn transfer(&self, size: usize) -> Result<Self::Transfer, String> {
        Ok(([self.triplet(SRC_OFF, size)?], self.remote(DST_OFF, size)?))
    }

    fn post_read(&mut self, (local, remote): &Self::Transfer) -> Result<(), String> {
        self.post(true, |ep, cookie, flags| ep.post_rdma_read(local, cookie, remote, flags))
            .map_err(|e| format!("dat_ep_post_rdma_read: {e}"))
    }

    fn post_write(&mut self, (local, remote): &Self::Transfer) -> Result<(), String> {
        self.post(true, |ep, cookie, flags| ep.post_rdma_write(local, cookie, remote, flags))
            .map_err(|e| format!("dat_ep_post_rdma_write: {e}"))
    }

    /// The sizes the WRITE ping-pong takes: a sequence number fits in the landing area.
    fn write_lat_size(&self, size: usize) -> Result<(), String> {
        if !(8..=LAT_LEN).contains(&size) {
            return Err(format!("RDMA WRITE ping-pong of {size} bytes: it takes 8 to {LAT_LEN}"));
        }
        Ok(())
    }

    fn clear_landing(&mut self) -> Result<(), String> {
        self.lmr.write(LAT_OFF, &[0; LAT_LEN]).map_err(|e| e.to_string())
    }

    /// From the source area (rewritten only after the peer answered the previous message,
    /// so the device has read it by then).
    fn write_seq(&mut self, size: usize, seq: u64) -> Result<(), String> {
        self.lmr.write(SRC_OFF + size - 8, &seq.to_le_bytes()).map_err(|e| e.to_string())?;
        let local = [self.triplet(SRC_OFF, size)?];
        let remote = self.remote(LAT_OFF, size)?;
        self.post(false, |ep, cookie, flags| ep.post_rdma_write(&local, cookie, &remote, flags))
            .map_err(|e| format!("dat_ep_post_rdma_write: {e}"))
    }

    fn landed(&self, size: usize) -> u64 {
        let mut v = [0u8; 8];
        // In bounds: write_lat_size checked `size` when the test started.
        match self.lmr.read(LAT_OFF + size - 8, &mut v) {
            Ok(()) => u64::from_le_bytes(v),
            Err(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conn_quals_follow_the_control_port_and_never_take_it() {
        assert_eq!(conn_quals(18520).next(), Some(18521));
        assert_eq!(conn_quals(18520).count(), CONN_QUAL_TRIES as usize);
        let wrap: Vec<u16> = conn_quals(65534).take(3).collect();
        assert_eq!(wrap, [65535, 1, 2]);
        assert!(conn_quals(65535).all(|q| q != 0 && q != 65535));
    }
}
