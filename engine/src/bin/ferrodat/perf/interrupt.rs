//! Cleanup when a run is interrupted (Ctrl-C, `kill`, a closed terminal).
//!
//! A run leaves scratch files (the private softhca fabric directory, a baseline's shared
//! file) and child processes (the local server, a baseline's helper). Their guards
//! ([`super::RemoveOnDrop`], [`super::ChildGuard`]) clean up on every way out that unwinds;
//! a signal's default action unwinds nothing. So [`install`] blocks SIGINT, SIGTERM and
//! SIGHUP in the calling thread (every thread started later inherits the mask; children do
//! not, std resets it at exec) and starts a thread that waits for them with `sigwait`: on
//! one it kills and reaps the children still registered, removes the scratch paths still
//! registered, then dies of the same signal (so a shell sees "interrupted", not a plain
//! failure). Waiting in a thread, rather than in a handler, lets the cleanup allocate and
//! take locks.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Scratch paths and child pids alive now, registered by their guards.
struct Registered {
    paths: Vec<PathBuf>,
    children: Vec<u32>,
}

static REGISTERED: Mutex<Registered> =
    Mutex::new(Registered { paths: Vec::new(), children: Vec::new() });

fn registered() -> std::sync::MutexGuard<'static, Registered> {
    // The lists stay consistent even if a holder panicked: each change is one push or one
    // retain.
    REGISTERED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn add_path(path: &Path) {
    registered().paths.push(path.to_path_buf());
}

pub fn remove_path(path: &Path) {
    registered().paths.retain(|p| p != path);
}

/// Starts `command` and registers the child in one step, under the lock the cleanup
/// takes: a signal's cleanup either sees the child or runs before it exists (and then
/// never lets it start), so no child escapes it.
pub fn spawn_child(command: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut r = registered();
    let child = command.spawn()?;
    r.children.push(child.id());
    Ok(child)
}

pub fn remove_child(pid: u32) {
    registered().children.retain(|&c| c != pid);
}

/// Blocks until child `pid` has ended, without reaping it (its pid stays ours until the
/// caller reaps it). Returns at once if it cannot wait (not a child any more).
pub fn wait_until_ended(pid: u32) {
    loop {
        // SAFETY: siginfo_t is plain data, written by waitid on success; WNOWAIT leaves the
        // child to be reaped by its owner.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// The signals a run cleans up after.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before sigaddset reads it,
    // and both only write through the pointer they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the signals in this thread and starts the thread that cleans up on them. Call
/// before starting any other thread (they must inherit the mask, or a signal could be
/// delivered to one of them with its default action).
pub fn install() -> Result<(), String> {
    let set = signal_set();
    // SAFETY: `set` is an initialised sigset_t; the old mask is not asked for.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(format!(
            "cannot block SIGINT/SIGTERM/SIGHUP to clean up on them (pthread_sigmask: {})",
            std::io::Error::from_raw_os_error(rc)
        ));
    }
    std::thread::Builder::new()
        .name("perf-interrupt".into())
        .spawn(move || wait_and_clean_up(set))
        .map_err(|e| format!("cannot start the thread that cleans up on Ctrl-C: {e}"))?;
    Ok(())
}

fn wait_and_clean_up(set: libc::sigset_t) {
    let mut signal: libc::c_int = 0;
    // SAFETY: `set` is an initialised sigset_t of signals blocked in every thread of the
    // run; sigwait writes the signal taken into `signal`.
    let rc = unsafe { libc::sigwait(&set, &mut signal) };
    if rc != 0 {
        // Cannot happen for a valid set; the signals stay blocked, which keeps the run
        // going rather than killing it uncleaned.
        return;
    }
    // Everything under the lock, which the guards take to deregister before they reap: a
    // pid seen here is a child not reaped yet (alive or a zombie), never a reused one. The
    // lock is never let go (the process dies holding it), so no child starts after this.
    let r = registered();
    for &pid in &r.children {
        // SAFETY: kill and waitpid take plain integers and a null status pointer; `pid` is
        // an unreaped child of this process (see above).
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
    }
    for path in &r.paths {
        let _ =
            if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    }
    // SAFETY: strsignal returns a pointer to a static or thread-local string (or NULL),
    // read at once.
    let name = unsafe {
        let s = libc::strsignal(signal);
        if s.is_null() {
            format!("signal {signal}")
        } else {
            std::ffi::CStr::from_ptr(s).to_string_lossy().into_owned()
        }
    };
    eprintln!("\nferrodat perf: interrupted ({name}); its scratch files and processes are gone");
    // Die of the signal itself: default action, unblocked in this thread only, raised at
    // this thread.
    // SAFETY: plain integers and an initialised sigset_t; resetting the disposition to the
    // default is what makes the raise below end the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal);
}
