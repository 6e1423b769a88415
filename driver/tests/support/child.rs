//! Child processes for the driver's multi-process tests (the pattern of softhca's own
//! `tests/support/child.rs`): the test binary re-executes itself with a role in the
//! environment; the child answers with `@@ ` lines on stdout and reads one command per line
//! from stdin. Synchronisation is on observed lines, never on sleeps.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Selects what a re-executed child does.
pub const ROLE_ENV: &str = "FERRODAT_DRIVER_TEST_ROLE";
/// How long the parent waits for any one line (generous: a loaded 2-core machine).
pub const CHILD_DEADLINE: Duration = Duration::from_secs(30);

/// A re-executed copy of this test binary running the test `entry` in `role`.
pub struct ChildProc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl ChildProc {
    pub fn spawn(entry: &str, role: &str, envs: &[(&str, &str)]) -> ChildProc {
        let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
        cmd.args(["--exact", entry, "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn the child test process");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest may print "test name ... " before our first line.
                if let Some(at) = line.find("@@ ")
                    && sender.send(line[at + 3..].to_string()).is_err()
                {
                    break;
                }
            }
        });
        ChildProc { child, stdin, lines }
    }

    /// The next line, whole; panics on a `FAIL` line, on the deadline, or when the child
    /// exits first.
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(CHILD_DEADLINE) {
            Ok(line) => {
                assert!(!line.starts_with("FAIL"), "child failed: {line}");
                line
            }
            Err(RecvTimeoutError::Timeout) => panic!("child: no answer within {CHILD_DEADLINE:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string());
                panic!("child exited ({status:?}) before answering")
            }
        }
    }

    /// The rest of the next line, which must start with `word`.
    pub fn expect(&mut self, word: &str) -> String {
        let line = self.line();
        match line.strip_prefix(word) {
            Some(rest) => rest.trim().to_string(),
            None => panic!("child: expected {word}, got {line:?}"),
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("child stdin open");
        writeln!(stdin, "{line}").expect("write to the child");
        stdin.flush().expect("flush the child's stdin");
    }

    /// Closes the child's stdin and requires a successful exit (within the deadline).
    pub fn finish(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + CHILD_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                assert!(status.success(), "child failed: {status}");
                return;
            }
            assert!(Instant::now() < deadline, "the child did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In a child: the next command line from the parent ("" at end of input).
pub fn read_command() -> String {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("read stdin");
    line.trim().to_string()
}

/// In a child: one message to the parent.
pub fn say(msg: &str) {
    println!("@@ {msg}");
    std::io::stdout().flush().expect("flush stdout");
}
