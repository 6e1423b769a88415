//! Completion channels: the fd on which armed CQs report their next completion.

use crate::context::Context;
use crate::cq::CqInner;
use crate::error::{Error, Result};
use ferrodat_abi::uverbs::{self, CompEventDesc, cmd};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use zerocopy::{FromBytes, IntoBytes};

/// A completion channel (CREATE_COMP_CHANNEL). It owns its fd, which can go into epoll
/// ([`AsRawFd`]); [`CompChannel::wait`] reads one 8-byte event record. Cheap to clone; CQs
/// that report to it hold a clone.
#[derive(Clone, Debug)]
pub struct CompChannel {
    pub(crate) inner: Arc<ChannelInner>,
}

#[derive(Debug)]
pub(crate) struct ChannelInner {
    fd: OwnedFd,
    /// The CQs reporting here, by user handle, so an event bumps its CQ's `arm_sn`.
    pub(crate) cqs: Mutex<HashMap<u64, Weak<CqInner>>>,
    _ctx: Context,
}

impl CompChannel {
    /// CREATE_COMP_CHANNEL.
    pub fn new(ctx: &Context) -> Result<CompChannel> {
        let r = ctx.run(
            "CREATE_COMP_CHANNEL",
            cmd::CREATE_COMP_CHANNEL,
            uverbs::CreateCompChannel::default().as_bytes(),
            &[],
            size_of::<uverbs::CreateCompChannelResp>(),
        )?;
        let resp: uverbs::CreateCompChannelResp =
            crate::command::read("CREATE_COMP_CHANNEL", &r, 0)?;
        if (resp.fd as i32) < 0 {
            return Err(Error::invalid("CREATE_COMP_CHANNEL", "negative fd in the response"));
        }
        // SAFETY: the command created this fd for us; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(resp.fd as RawFd) };
        set_nonblocking("CREATE_COMP_CHANNEL", fd.as_raw_fd())?;
        Ok(CompChannel {
            inner: Arc::new(ChannelInner {
                fd,
                cqs: Mutex::new(HashMap::new()),
                _ctx: ctx.clone(),
            }),
        })
    }

    /// Waits up to `timeout` (`None`: forever) for a completion event and returns the user
    /// handle of the CQ that fired, `Ok(None)` on timeout. The event counts as acknowledged
    /// (the CQ's arm sequence number advances, as `ibv_get_cq_event` does); the CQ must be
    /// re-armed for the next one. EINTR is retried within the timeout.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Option<u64>> {
        let fd = self.inner.fd.as_raw_fd();
        let Some(d) = read_event::<CompEventDesc>("wait for a completion event", fd, timeout)?
        else {
            return Ok(None);
        };
        let cqs = self.inner.cqs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cq) = cqs.get(&d.cq_handle).and_then(Weak::upgrade) {
            cq.arm_sn.fetch_add(1, Ordering::AcqRel);
            cq.comp_events.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Some(d.cq_handle))
    }
}

impl AsRawFd for CompChannel {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
}

/// poll(2) for POLLIN up to `timeout`; EINTR retried with the remaining time.
fn wait_readable(op: &'static str, fd: RawFd, timeout: Option<Duration>) -> Result<bool> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                // round up so a short timeout does not spin
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            }
        };
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, ours.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(Error::errno(op, e));
        }
        if n == 0 {
            if deadline.is_some_and(|d| Instant::now() < d) {
                continue;
            }
            return Ok(false);
        }
        if p.revents & (libc::POLLERR | libc::POLLNVAL) != 0 && p.revents & libc::POLLIN == 0 {
            return Err(Error::invalid(op, "the event fd reports an error"));
        }
        if p.revents & libc::POLLHUP != 0 && p.revents & libc::POLLIN == 0 {
            return Err(Error::invalid(op, "the event fd was closed by the device side"));
        }
        return Ok(true);
    }
}

/// Waits up to `timeout` (`None`: forever) for one record of the event fd `fd` (made
/// non-blocking by [`set_nonblocking`]) and reads it; `Ok(None)` on timeout. Another
/// thread may take the event this one was woken for: the read then finds none and the wait
/// goes on, within the same timeout (a blocking read would sleep past it).
pub(crate) fn read_event<T: FromBytes + IntoBytes>(
    op: &'static str,
    fd: RawFd,
    timeout: Option<Duration>,
) -> Result<Option<T>> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if !wait_readable(op, fd, left)? {
            return Ok(None);
        }
        if let Some(record) = read_record(op, fd)? {
            return Ok(Some(record));
        }
    }
}

/// Makes the event fd `fd` non-blocking, for [`read_event`].
pub(crate) fn set_nonblocking(op: &'static str, fd: RawFd) -> Result<()> {
    // SAFETY: fcntl on an fd we own, no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(Error::last_os_error(op).with_detail("make the event fd non-blocking"));
    }
    Ok(())
}

/// Reads one fixed-size record; EINTR retried; None if there is none (EAGAIN).
fn read_record<T: FromBytes + IntoBytes>(op: &'static str, fd: RawFd) -> Result<Option<T>> {
    let mut buf = vec![0u8; size_of::<T>()];
    loop {
        // SAFETY: `buf` has room for `buf.len()` bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            if e == libc::EAGAIN {
                return Ok(None);
            }
            return Err(Error::errno(op, e));
        }
        if n as usize != buf.len() {
            return Err(Error::invalid(
                op,
                format!("read {n} bytes, an event record is {}", buf.len()),
            ));
        }
        return T::read_from_bytes(&buf).map(Some).map_err(|_| Error::invalid(op, "bad record"));
    }
}
