//! Is the process that wrote a shared record still there?
//!
//! A process is identified by its pid *and* its start time (field 22 of
//! `/proc/<pid>/stat`, in clock ticks since boot), so a pid recycled by the kernel for an
//! unrelated process does not keep a dead owner's resources alive. A zombie (exited but not
//! yet reaped) counts as gone: it will never touch shared memory again.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a shared record stores about the process that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessIdentity {
    pub(crate) pid: u32,
    /// 0 when `/proc` could not tell (then only the pid is checked).
    pub(crate) start_time: u64,
}

/// Cached: our start time never changes (a forked child gets a new identity, see `current`).
static SELF_IDENTITY: OnceLock<ProcessIdentity> = OnceLock::new();

impl ProcessIdentity {
    /// The calling process.
    pub(crate) fn current() -> Self {
        let pid = std::process::id();
        let cached = *SELF_IDENTITY.get_or_init(|| Self {
            pid,
            start_time: read_proc_stat(pid).map_or(0, |s| s.start_time),
        });
        if cached.pid == pid {
            cached
        } else {
            // We are a fork()ed child of the process that filled the cache.
            Self { pid, start_time: read_proc_stat(pid).map_or(0, |s| s.start_time) }
        }
    }

    /// A process known by its pid only (a pid recycled since passes for it).
    pub(crate) fn pid_only(pid: u32) -> Self {
        Self { pid, start_time: 0 }
    }

    /// True when the process is certainly gone: no such pid, a zombie, or the pid now
    /// belongs to a process started at another time. When in doubt (no `/proc`, another
    /// user's process) it answers false: reclaiming a live process's resources is worse
    /// than keeping a dead one's.
    pub(crate) fn is_gone(&self) -> bool {
        if self.pid == 0 || self.pid > i32::MAX as u32 {
            return true; // never a valid owner: garbage
        }
        // SAFETY: signal 0 performs only the existence and permission check.
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, 0) };
        if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            return true;
        }
        match read_proc_stat(self.pid) {
            Ok(stat) => {
                stat.state == b'Z'
                    || stat.state == b'X'
                    || (self.start_time != 0 && stat.start_time != self.start_time)
            }
            // It vanished between kill() and the read.
            Err(ProcStatError::NoSuchProcess) => true,
            Err(ProcStatError::Unreadable) => false,
        }
    }
}

/// The word a process puts in a shared slot to say "I am in here": its pid, and the low
/// 32 bits of its start time so that a recycled pid does not pass for it.
pub(crate) fn slot_word(me: ProcessIdentity) -> u64 {
    u64::from(me.pid) | (me.start_time & 0xffff_ffff) << 32
}

/// True when the process that stored `word` ([`slot_word`]) is certainly gone.
pub(crate) fn slot_owner_is_gone(word: u64) -> bool {
    let (pid, start_low) = (word as u32, word >> 32);
    if pid == 0 || pid > i32::MAX as u32 {
        return true;
    }
    match read_proc_stat(pid) {
        Ok(stat) => {
            stat.state == b'Z'
                || stat.state == b'X'
                || (start_low != 0 && stat.start_time & 0xffff_ffff != start_low)
        }
        Err(ProcStatError::NoSuchProcess) => true,
        Err(ProcStatError::Unreadable) => false,
    }
}

/// Waits while `busy()` holds: another process is in the middle of something short (a
/// copy). Spins a little, then sleeps 20 us at a time; every 64th round asks `gone()`
/// whether that process is gone (true ends the wait: `gone` may free what it held), and
/// gives up after `limit`, if one is given, counted from the first sleep.
pub(crate) fn wait_while_busy(
    mut busy: impl FnMut() -> bool,
    mut gone: impl FnMut() -> bool,
    limit: Option<std::time::Duration>,
) {
    let mut round = 0u32;
    let mut since = None;
    while busy() {
        round = round.wrapping_add(1);
        if round < 64 {
            std::hint::spin_loop();
            continue;
        }
        let start = *since.get_or_insert_with(std::time::Instant::now);
        if limit.is_some_and(|limit| start.elapsed() >= limit)
            || (round.is_multiple_of(64) && gone())
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

struct ProcStat {
    state: u8,
    start_time: u64,
}

enum ProcStatError {
    NoSuchProcess,
    Unreadable,
}

fn read_proc_stat(pid: u32) -> Result<ProcStat, ProcStatError> {
    let text = match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProcStatError::NoSuchProcess);
        }
        Err(_) => return Err(ProcStatError::Unreadable),
    };
    parse_proc_stat(&text).ok_or(ProcStatError::Unreadable)
}

/// `pid (comm) S ppid ...`: comm may contain spaces and parentheses, so fields are counted
/// after the *last* `)`. State is field 3, starttime field 22.
fn parse_proc_stat(text: &[u8]) -> Option<ProcStat> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(text.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(ProcStat { state, start_time })
}

/// A non-zero 64-bit identifier, unique with overwhelming probability (getrandom, with a
/// time/pid/counter mix as the fallback when the syscall is unavailable).
pub(crate) fn unique_id() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: the buffer is 8 writable bytes; flags 0 = urandom source, may block only
    // before the pool is initialised at boot.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let mut id = if n == 8 {
        u64::from_ne_bytes(bytes)
    } else {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        splitmix64(
            nanos ^ (u64::from(std::process::id()) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed),
        )
    };
    if id == 0 {
        id = 1;
    }
    id
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comm_with_parentheses_and_spaces() {
        let line = b"1234 (a) b (c)) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20";
        let stat = parse_proc_stat(line).expect("parses");
        assert_eq!(stat.state, b'S');
        assert_eq!(stat.start_time, 987654);
    }

    #[test]
    fn self_is_alive_and_a_wrong_start_time_is_not() {
        let me = ProcessIdentity::current();
        assert!(!me.is_gone());
        if me.start_time != 0 {
            let impostor = ProcessIdentity { start_time: me.start_time + 1, ..me };
            assert!(impostor.is_gone());
        }
        assert!(ProcessIdentity { pid: 0, start_time: 0 }.is_gone());
        assert!(!slot_owner_is_gone(slot_word(me)));
        if me.start_time != 0 {
            assert!(slot_owner_is_gone(slot_word(ProcessIdentity {
                start_time: me.start_time + 1,
                ..me
            })));
        }
        assert!(slot_owner_is_gone(0));
    }
}
