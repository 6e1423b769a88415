//! The RDMA tests, written once for both levels: each level ([`super::rdma`], the driver's
//! QP; [`super::dat`], the engine's EP and EVDs) is a [`PerfSide`], and the client's tests
//! and the server's answers below drive it. The layout of the buffer both sides register
//! and how each test runs are in [`super::rdma`]'s module docs.

use super::control::{Control, Job};
use super::plan::{Outcome, Sizing, Timed, timed_groups};
use super::rdma::{MAX_MESSAGE, RECV_SLOT, SIGNAL_EVERY, STALL, STOP_SEQ, WINDOW};
use std::time::Instant;

/// What one side's completions said so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Send-queue requests posted, and of those signalled.
    pub posted: u64,
    pub signalled: u64,
    /// Completions seen: signalled requests (READs included), READs, receives.
    pub sends_done: u64,
    pub reads_done: u64,
    pub recvs: u64,
    /// The peer's stop arrived.
    pub stopped: bool,
}

impl Counts {
    /// A request completed (`read`: an RDMA READ).
    pub fn request_done(&mut self, read: bool) {
        self.sends_done += 1;
        if read {
            self.reads_done += 1;
        }
    }

    /// Numbers the next request and says whether it is signalled: if `signal`, or every
    /// [`SIGNAL_EVERY`]th, so that the send queue's entries are retired. Both levels post by
    /// this rule; [`Counts::posted_request`] records the post once it went in.
    pub fn next_request(&mut self, signal: bool) -> (u64, bool) {
        self.posted += 1;
        (self.posted, signal || self.posted.is_multiple_of(SIGNAL_EVERY))
    }

    /// The request [`Counts::next_request`] numbered was posted.
    pub fn posted_request(&mut self, signalled: bool) {
        if signalled {
            self.signalled += 1;
        }
    }

    /// A receive completed (`stop`: it was the peer's stop).
    pub fn received(&mut self, stop: bool) {
        self.recvs += 1;
        self.stopped |= stop;
    }
}

/// One side of the RDMA tests at one level.
pub trait PerfSide {
    /// An RDMA READ's or WRITE's local and remote areas, made before the timed loop.
    type Transfer;

    /// Client: asks the server for `job` at this level and waits until it is ready.
    fn start_job(ctl: &mut Control, job: Job) -> Result<(), String>;

    fn counts(&self) -> &Counts;
    fn counts_mut(&mut self) -> &mut Counts;

    /// One look for completions (the receives too if `recv`, where the level keeps them
    /// apart); returns how many it took. A receive is reposted at once; a failed request
    /// is an error.
    fn pump(&mut self, recv: bool) -> Result<usize, String>;

    /// A SEND of `size` bytes.
    fn send(&mut self, size: usize) -> Result<(), String>;

    /// Tells the peer the test is over.
    fn send_stop(&mut self) -> Result<(), String>;

    /// `size` bytes of the source area and of the peer's [`DST_OFF`](super::rdma::DST_OFF) area.
    fn transfer(&self, size: usize) -> Result<Self::Transfer, String>;

    /// Posts a signalled RDMA READ of `t`'s remote area into its local one.
    fn post_read(&mut self, t: &Self::Transfer) -> Result<(), String>;

    /// Posts a signalled RDMA WRITE of `t`'s local area to its remote one.
    fn post_write(&mut self, t: &Self::Transfer) -> Result<(), String>;

    /// Whether the WRITE ping-pong takes `size`-byte messages.
    fn write_lat_size(&self, size: usize) -> Result<(), String>;

    /// Zeroes the landing area.
    fn clear_landing(&mut self) -> Result<(), String>;

    /// RDMA WRITEs a `size`-byte message ending in `seq` into the peer's landing area.
    fn write_seq(&mut self, size: usize, seq: u64) -> Result<(), String>;

    /// The sequence number in the last 8 bytes of a `size`-byte landing message.
    fn landed(&self, size: usize) -> u64;

    /// Pumps until `done` holds; gives up after [`STALL`] without it.
    fn wait_until(
        &mut self,
        what: &str,
        recv: bool,
        done: impl Fn(&Self) -> bool,
    ) -> Result<(), String> {
        let mut idle = 0u32;
        let mut since: Option<Instant> = None;
        loop {
            if done(self) {
                return Ok(());
            }
            if self.pump(recv)? == 0 {
                idle += 1;
                if idle.is_multiple_of(4096)
                    && since.get_or_insert_with(Instant::now).elapsed() > STALL
                {
                    return Err(format!(
                        "waited {} s for {what}: the peer stopped answering (see its output)",
                        STALL.as_secs()
                    ));
                }
            } else {
                since = None;
            }
        }
    }

    /// Waits until every signalled request so far has completed.
    fn quiesce(&mut self) -> Result<(), String> {
        let want = self.counts().signalled;
        self.wait_until("the last request completions", false, |s| s.counts().sends_done >= want)
    }

    /// One SEND and its answer.
    fn send_round_trip(&mut self, size: usize) -> Result<(), String> {
        let want = self.counts().recvs + 1;
        self.send(size)?;
        self.wait_until("the answer to a SEND", true, |s| s.counts().recvs >= want)
    }
}

/// Refuses message sizes outside 1..=`max`.
fn check_size(size: usize, max: usize) -> Result<(), String> {
    if !(1..=max).contains(&size) {
        return Err(format!("a {size}-byte message: this test takes 1 to {max} bytes"));
    }
    Ok(())
}

/// Client: SEND/RECV ping-pong of `size` bytes.
pub fn send_recv<S: PerfSide>(
    side: &mut S,
    ctl: &mut Control,
    size: usize,
    sizing: Sizing,
) -> Result<Timed, String> {
    check_size(size, RECV_SLOT)?;
    S::start_job(ctl, Job::Echo(size))?;
    let timed = timed_groups(sizing, || side.send_round_trip(size))?;
    side.send_stop()?;
    ctl.wait_done()?;
    Ok(Timed::new(timed, true))
}

/// Client: RDMA WRITE ping-pong of `size` bytes.
pub fn write_lat<S: PerfSide>(
    side: &mut S,
    ctl: &mut Control,
    size: usize,
    sizing: Sizing,
) -> Result<Timed, String> {
    side.write_lat_size(size)?;
    side.clear_landing()?;
    S::start_job(ctl, Job::WriteLat(size))?;
    let mut seq = 0u64;
    let timed = timed_groups(sizing, || {
        seq += 1;
        side.write_seq(size, seq)?;
        side.wait_until("the peer's RDMA WRITE", true, |s| s.landed(size) == seq)
    })?;
    side.write_seq(size, STOP_SEQ)?;
    ctl.wait_done()?;
    Ok(Timed::new(timed, true))
}

/// Client: RDMA READ of `size` bytes, one at a time; the whole round trip.
pub fn read_lat<S: PerfSide>(
    side: &mut S,
    ctl: &mut Control,
    size: usize,
    sizing: Sizing,
) -> Result<Timed, String> {
    check_size(size, MAX_MESSAGE)?;
    let read = side.transfer(size)?;
    S::start_job(ctl, Job::Serve)?;
    let timed = timed_groups(sizing, || {
        let want = side.counts().reads_done + 1;
        side.post_read(&read)?;
        side.wait_until("an RDMA READ", false, |s| s.counts().reads_done >= want)
    })?;
    side.send_stop()?;
    ctl.wait_done()?;
    Ok(Timed::new(timed, false))
}

/// Client: RDMA WRITE stream of `size`-byte messages.
pub fn write_bw<S: PerfSide>(
    side: &mut S,
    ctl: &mut Control,
    size: usize,
    sizing: Sizing,
) -> Result<Outcome, String> {
    check_size(size, MAX_MESSAGE)?;
    S::start_job(ctl, Job::Serve)?;
    stream(side, size, sizing.warmup())?;
    let (messages, seconds) = stream(side, size, sizing)?;
    side.send_stop()?;
    ctl.wait_done()?;
    Ok(Outcome::Bandwidth { bytes: messages * size as u64, messages, seconds })
}

/// [`WINDOW`] signalled WRITEs outstanding for as long as `sizing` says; (messages, seconds).
fn stream<S: PerfSide>(side: &mut S, size: usize, sizing: Sizing) -> Result<(u64, f64), String> {
    side.quiesce()?;
    let write = side.transfer(size)?;
    let base = side.counts().sends_done;
    let mut posted = 0u64;
    let mut meter = sizing.meter();
    let start = Instant::now();
    while meter.more() {
        if posted >= WINDOW {
            let need = base + posted - WINDOW + 1;
            side.wait_until("RDMA WRITE completions", false, |s| s.counts().sends_done >= need)?;
        }
        side.post_write(&write)?;
        posted += 1;
        meter.add(1);
    }
    side.wait_until("the last RDMA WRITE completions", false, |s| {
        s.counts().sends_done >= base + posted
    })?;
    Ok((posted, start.elapsed().as_secs_f64()))
}

/// Server: runs `job` for the client, then says DONE.
pub fn serve<S: PerfSide>(side: &mut S, ctl: &mut Control, job: Job) -> Result<(), String> {
    let run = |side: &mut S, ctl: &mut Control| -> Result<(), String> {
        side.counts_mut().stopped = false;
        match job {
            Job::Echo(size) => {
                check_size(size, RECV_SLOT)?;
                ctl.send("GO")?;
                loop {
                    let want = side.counts().recvs + 1;
                    side.wait_until("the client's SEND", true, |s| s.counts().recvs >= want)?;
                    if side.counts().stopped {
                        return Ok(());
                    }
                    side.send(size)?;
                }
            }
            Job::WriteLat(size) => {
                side.write_lat_size(size)?;
                side.clear_landing()?;
                ctl.send("GO")?;
                let mut seq = 0u64;
                loop {
                    seq += 1;
                    side.wait_until("the client's RDMA WRITE", true, |s| {
                        let v = s.landed(size);
                        v == seq || v == STOP_SEQ
                    })?;
                    if side.landed(size) == STOP_SEQ {
                        return Ok(());
                    }
                    side.write_seq(size, seq)?;
                }
            }
            Job::Serve => {
                // The client's one-sided traffic completes nothing here, so no stall
                // timeout: the test ends with the stop SEND, or when the client goes away.
                ctl.send("GO")?;
                let mut idle = 0u32;
                while !side.counts().stopped {
                    if side.pump(true)? == 0 {
                        idle = idle.wrapping_add(1);
                        if idle.is_multiple_of(1 << 16) && ctl.peer_gone() {
                            return Err("the client went away during the test".into());
                        }
                    }
                }
                Ok(())
            }
        }
    };
    run(side, ctl).map_err(|e| ctl.fail(e))?;
    ctl.send("DONE")
}
