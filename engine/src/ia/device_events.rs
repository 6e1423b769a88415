//! The device's asynchronous events, reported as DAT async errors.
//!
//! The uverbs async fd tells of failures no completion carries: a CQ that overran, a QP
//! the device put in ERR as responder (a peer's bad rkey, an invalid request), a port or
//! device that went down. Each IA has one thread that sleeps in `poll(2)` on that fd (no
//! CPU while nothing happens) and reports each event on the IA's async EVD as the DAT
//! async error OFA dapl 2.1 reports it as (its `dapls_ib_get_async_event`; older dapl
//! made DEVICE_FATAL a PROVIDER_INTERNAL_ERROR):
//!
//! | device event                                  | DAT event                      | object |
//! |-----------------------------------------------|--------------------------------|--------|
//! | `CQ_ERR` (overrun)                            | `DAT_ASYNC_ERROR_EVD_OVERFLOW` | EVD    |
//! | `QP_FATAL`, `QP_REQ_ERR`, `QP_ACCESS_ERR`     | `DAT_ASYNC_ERROR_EP_BROKEN`    | EP     |
//! | `DEVICE_FATAL`, `PORT_ERR` (the IA's port)    | `DAT_ASYNC_ERROR_IA_CATASTROPHIC` | IA  |
//!
//! Not reported: `QP_LAST_WQE_REACHED` (the endpoint reports `EP_BROKEN` itself when its
//! QP leaves the SRQ, also for the disconnects it makes; see `Ep::step`), `SRQ_LIMIT_REACHED`
//! (no low watermarks are offered), `SRQ_ERR` (DAT has no async error number for an SRQ;
//! its endpoints' receives fail instead), and the informational ones (`COMM_EST`, `PORT_ACTIVE`,
//! LID/PKEY/SM/GID changes, path migration). OFA also reports LID, PKEY and SM changes as
//! catastrophic; here they are not, as the IA keeps working through them.
//!
//! Where OFA names the IA in every async event, the event here names the object it is
//! about (`dat_handle` of the EVD or endpoint), which DAT 2.0's async event data allows
//! and SRQ consumers such as dtestsrq rely on.
//!
//! Beyond the report, an endpoint whose QP failed ends its connection as a failed DTO
//! does (BROKEN on its connect EVD, an abrupt disconnect to the peer, whose QP would
//! otherwise only learn of it from retries); OFA only moves it to its error state, which
//! DAT 2.0 calls DISCONNECTED. An SRQ endpoint reports its EP_BROKEN through that
//! teardown, so that it gets one per QP failure, not two.
//!
//! Events name the CQ or QP by the user handle it was created with; EVDs and endpoints
//! [`DeviceEvents::watch`] theirs. An event for an object already freed is dropped.

use crate::evd::{Evd, EvdShared};
use crate::event::{Event, ObjectId};
use crate::event_fd::EventFd;
use crate::owned_thread::OwnedThread;
use ferrodat_abi::dat::{EventNumber, event as dat_event};
use ferrodat_abi::uverbs::event as device_event;
use ferrodat_driver::{AsyncEvent, Context};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

/// What a device event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// A CQ or QP, by user handle: the EVD or endpoint it belongs to.
    Object,
    /// A port, by number: the IA if it is the IA's port.
    Port,
    /// The device: the IA.
    Device,
}

/// The DAT async error device event `event_type` is reported as, and what it names;
/// `None` for the events not reported (see the module docs).
fn dat_meaning(event_type: u32) -> Option<(EventNumber, Scope)> {
    match event_type {
        device_event::CQ_ERR => Some((dat_event::ASYNC_ERROR_EVD_OVERFLOW, Scope::Object)),
        device_event::QP_FATAL | device_event::QP_REQ_ERR | device_event::QP_ACCESS_ERR => {
            Some((dat_event::ASYNC_ERROR_EP_BROKEN, Scope::Object))
        }
        device_event::PORT_ERR => Some((dat_event::ASYNC_ERROR_IA_CATASTROPHIC, Scope::Port)),
        device_event::DEVICE_FATAL => Some((dat_event::ASYNC_ERROR_IA_CATASTROPHIC, Scope::Device)),
        _ => None,
    }
}

/// An EVD or endpoint, as the owner of a CQ or QP the device reports errors for.
pub(crate) trait DeviceErrorTarget: Send + Sync {
    /// The device reported the DAT async error `number` for its CQ or QP: act on it (an
    /// endpoint ends its connection, as a failed DTO does). Returns whether the async EVD
    /// should get `number` for it (an SRQ endpoint reports EP_BROKEN itself, as its QP
    /// leaves the SRQ, and only once).
    fn device_error(self: Arc<Self>, number: EventNumber) -> bool;
}

/// An EVD or endpoint a CQ or QP belongs to, held weakly.
struct Target {
    object: ObjectId,
    owner: Weak<dyn DeviceErrorTarget>,
}

/// What the IA and its device-event thread share: where events go.
pub(super) struct DeviceEvents {
    /// The async EVD (`dat_ia_open`'s): held weakly, the consumer owns it.
    async_evd: Mutex<Option<Weak<EvdShared>>>,
    /// CQ and QP user handles → the EVD or endpoint each belongs to.
    targets: Mutex<HashMap<u64, Target>>,
    /// The IA's port (`PORT_ERR` names a port).
    port: u8,
    /// Raised to stop the thread (readable from then on); shared so that it outlives a
    /// stop from the thread itself.
    stop: EventFd,
}

impl std::fmt::Debug for DeviceEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceEvents")
            .field("targets", &lock(&self.targets).len())
            .field("port", &self.port)
            .finish()
    }
}

impl DeviceEvents {
    pub(super) fn set_async_evd(&self, evd: &Evd) {
        *lock(&self.async_evd) = Some(evd.downgrade());
    }

    pub(super) fn async_evd(&self) -> Option<Evd> {
        lock(&self.async_evd).as_ref().and_then(Evd::upgrade)
    }

    /// Queues `number` for `object` on the async EVD; dropped if there is none, or if it is
    /// full (DAT lets a full async EVD lose events).
    pub(super) fn report(&self, number: EventNumber, object: ObjectId) {
        if let Some(evd) = self.async_evd() {
            let _ = evd.post_event(Event::Async { number, object });
        }
    }

    /// Events for the CQ or QP created with `user_handle` name `object` and go to `owner`,
    /// while it lives. A handle watched again (a new QP of the same endpoint gets a new handle;
    /// handles are not reused) replaces the old entry.
    pub(super) fn watch(
        &self,
        user_handle: u64,
        object: ObjectId,
        owner: Weak<dyn DeviceErrorTarget>,
    ) {
        let mut t = lock(&self.targets);
        // Amortised pruning: the map stays within about twice the live objects.
        if t.len() >= 64 && t.len().is_power_of_two() {
            t.retain(|_, target| target.owner.strong_count() > 0);
        }
        t.insert(user_handle, Target { object, owner });
    }

    /// Stops naming anything for `user_handle` (its CQ or QP is gone).
    pub(super) fn forget(&self, user_handle: u64) {
        lock(&self.targets).remove(&user_handle);
    }

    /// Reports `ev` as its DAT meaning, if it has one and names something of this IA.
    fn deliver(&self, ev: AsyncEvent) {
        let Some((number, scope)) = dat_meaning(ev.event_type) else { return };
        let object = match scope {
            Scope::Object => {
                let found = lock(&self.targets)
                    .get(&ev.element)
                    .and_then(|t| Some((t.object, t.owner.upgrade()?)));
                // Acted on without the map's lock: the endpoint takes its own locks.
                let Some((object, owner)) = found else { return };
                if !owner.device_error(number) {
                    return;
                }
                object
            }
            Scope::Port if ev.element != u64::from(self.port) => return,
            // No object id: the async event then names the IA itself.
            Scope::Port | Scope::Device => 0,
        };
        self.report(number, object);
    }
}

/// The IA's device-event thread; dropping it stops the thread.
pub(super) struct Watcher {
    shared: Arc<DeviceEvents>,
    thread: OwnedThread,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shared.fmt(f)
    }
}

impl Watcher {
    /// Starts the thread reading `ctx`'s async events for the IA called `ia_name` on
    /// `port`. Fails when the process is out of file descriptors or threads.
    pub(super) fn start(ctx: &Context, ia_name: &str, port: u8) -> std::io::Result<Watcher> {
        let shared = Arc::new(DeviceEvents {
            async_evd: Mutex::new(None),
            targets: Mutex::new(HashMap::new()),
            port,
            stop: EventFd::new()?,
        });
        let ctx = ctx.clone();
        let for_thread = shared.clone();
        // Thread names are cut at 15 bytes by the kernel. The stack is the CM thread's: a
        // consumer's proxy agent on the async EVD's CNO runs on it.
        let name = format!("async {ia_name}");
        let thread = OwnedThread::spawn(name, 256 * 1024, move || run(&ctx, &for_thread))?;
        Ok(Watcher { shared, thread })
    }

    pub(super) fn events(&self) -> &DeviceEvents {
        &self.shared
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.stop.raise();
        // The IA's last handle can go on the thread itself (an async EVD it just posted to,
        // dropped there, held the IA), or in a forked child: the join lets go then.
        let _ = self.thread.join();
    }
}

/// The thread: sleep until the device has events or the IA stops, report them.
fn run(ctx: &Context, shared: &DeviceEvents) {
    let async_fd = ctx.async_fd().as_raw_fd();
    loop {
        match wait(async_fd, shared.stop.as_raw_fd()) {
            Ok(Woke::Stop) => return,
            Ok(Woke::Events) => {}
            Err(e) => {
                eprintln!(
                    "ferrodat: waiting for device events failed ({e}); asynchronous errors \
                     (CQ overrun, QP errors, port down) are no longer reported on the async EVD"
                );
                return;
            }
        }
        loop {
            match ctx.read_async_event(Some(std::time::Duration::ZERO)) {
                Ok(Some(ev)) => shared.deliver(ev),
                Ok(None) => break,
                Err(e) => {
                    eprintln!(
                        "ferrodat: reading a device event failed ({e}); asynchronous errors \
                         are no longer reported on the async EVD"
                    );
                    return;
                }
            }
        }
    }
}

/// What ended a [`wait`].
enum Woke {
    /// The stop eventfd was raised (it stays readable).
    Stop,
    /// The device may have events (or EINTR: the caller reads, finds none, and waits again).
    Events,
}

/// Sleeps until `async_fd` or `stop` is readable.
fn wait(async_fd: RawFd, stop: RawFd) -> std::io::Result<Woke> {
    let mut fds = [
        libc::pollfd { fd: async_fd, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: stop, events: libc::POLLIN, revents: 0 },
    ];
    // SAFETY: `fds` is a live array of two pollfds; poll writes only their revents.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted { Ok(Woke::Events) } else { Err(e) };
    }
    if fds[1].revents != 0 {
        return Ok(Woke::Stop);
    }
    if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
        && fds[0].revents & libc::POLLIN == 0
    {
        return Err(std::io::Error::other(format!(
            "the async event fd reports an error or hang-up (revents {:#x})",
            fds[0].revents
        )));
    }
    Ok(Woke::Events)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_events_map_to_the_dat_async_errors_ofa_reports() {
        use dat_event::*;
        use device_event::*;
        assert_eq!(dat_meaning(CQ_ERR), Some((ASYNC_ERROR_EVD_OVERFLOW, Scope::Object)));
        for qp in [QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR] {
            assert_eq!(dat_meaning(qp), Some((ASYNC_ERROR_EP_BROKEN, Scope::Object)), "{qp}");
        }
        assert_eq!(dat_meaning(PORT_ERR), Some((ASYNC_ERROR_IA_CATASTROPHIC, Scope::Port)));
        assert_eq!(dat_meaning(DEVICE_FATAL), Some((ASYNC_ERROR_IA_CATASTROPHIC, Scope::Device)));
        for quiet in [
            COMM_EST,
            SQ_DRAINED,
            PATH_MIG,
            PATH_MIG_ERR,
            PORT_ACTIVE,
            LID_CHANGE,
            PKEY_CHANGE,
            SM_CHANGE,
            SRQ_LIMIT_REACHED,
            SRQ_ERR,
            QP_LAST_WQE_REACHED,
            CLIENT_REREGISTER,
            GID_CHANGE,
        ] {
            assert_eq!(dat_meaning(quiet), None, "event {quiet}");
        }
    }
}
