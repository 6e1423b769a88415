//! Child processes for multi-process tests: the test binary re-executes itself with a
//! role in the environment; the child talks to the parent with `@@ ` lines on stdout and
//! reads commands, one per line, from stdin. Synchronisation is on observed lines, never
//! on sleeps.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Selects what a re-executed child does.
pub const ROLE_ENV: &str = "SOFTHCA_TEST_ROLE";
/// How long the parent waits for any one line (generous: a loaded 2-core machine).
pub const CHILD_DEADLINE: Duration = Duration::from_secs(30);

/// A re-executed copy of this test binary running `entry` (a test name) in `role`.
pub struct ChildProc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl ChildProc {
    pub fn spawn(entry: &str, role: &str, envs: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
        cmd.args(["--exact", entry, "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn child test process");
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

    /// The rest of the next line starting with `word`; panics on a `FAIL` line, on the
    /// deadline or when the child exits first.
    pub fn expect(&mut self, word: &str) -> String {
        let deadline = Instant::now() + CHILD_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(word) {
                        return rest.trim().to_string();
                    }
                    assert!(!line.starts_with("FAIL"), "child failed: {line}");
                }
                Err(RecvTimeoutError::Timeout) => panic!("child: no {word} within the deadline"),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string());
                    panic!("child exited ({status:?}) before sending {word}")
                }
            }
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("child stdin open");
        writeln!(stdin, "{line}").expect("write to child");
        stdin.flush().expect("flush child stdin");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's stdin and requires a successful exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for child");
        assert!(status.success(), "child failed: {status}");
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
        self.kill();
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
