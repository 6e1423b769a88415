//! A thread an object starts and waits for when it goes (the CM thread, the device-event
//! thread). Its owner may be dropped on that very thread (by a callback it ran), or in a
//! child forked after the thread started, where the thread does not exist: joining then
//! would deadlock or fail, so the owner lets go instead.

use std::thread::JoinHandle;

/// A started thread and the process it was started in.
#[derive(Debug)]
pub(crate) struct OwnedThread {
    handle: Option<JoinHandle<()>>,
    pid: u32,
}

impl OwnedThread {
    /// Starts `f` on a thread called `name` with a stack of `stack` bytes.
    pub(crate) fn spawn(
        name: String,
        stack: usize,
        f: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<OwnedThread> {
        let handle = std::thread::Builder::new().name(name).stack_size(stack).spawn(f)?;
        Ok(OwnedThread { handle: Some(handle), pid: std::process::id() })
    }

    /// Its id.
    pub(crate) fn id(&self) -> Option<std::thread::ThreadId> {
        self.handle.as_ref().map(|h| h.thread().id())
    }

    /// Waits for the thread to end (its owner has told it to stop). Returns at once when
    /// called on the thread itself (it ends on its own once the caller returns) or in a
    /// forked child. `Err` if the thread panicked.
    pub(crate) fn join(&mut self) -> Result<(), ()> {
        let Some(h) = self.handle.take() else { return Ok(()) };
        if h.thread().id() == std::thread::current().id() || self.pid != std::process::id() {
            return Ok(());
        }
        h.join().map_err(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_waits_for_the_thread_and_reports_a_panic() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut t = OwnedThread::spawn("t-ok".into(), 64 * 1024, move || {
            tx.send(()).unwrap();
        })
        .unwrap();
        assert!(t.id().is_some());
        assert_eq!(t.join(), Ok(()));
        assert!(rx.try_recv().is_ok(), "the thread ran to its end before join returned");
        assert_eq!(t.join(), Ok(()), "a second join is a no-op");
        let mut p =
            OwnedThread::spawn("t-panic".into(), 64 * 1024, || panic!("on purpose")).unwrap();
        assert_eq!(p.join(), Err(()));
    }

    #[test]
    fn in_a_forked_child_join_lets_go() {
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let mut t = OwnedThread::spawn("t-fork".into(), 64 * 1024, move || {
            let _ = stop_rx.recv();
        })
        .unwrap();
        // SAFETY: the child only joins (which must return at once) and exits with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = if t.join() == Ok(()) { 0 } else { 1 };
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a live int.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
        stop_tx.send(()).unwrap();
        assert_eq!(t.join(), Ok(()));
    }
}
