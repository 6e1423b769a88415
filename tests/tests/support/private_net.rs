//! A network namespace of the test's own, with only `lo` (up), for the processes of one
//! test: the stock DAT programs listen on fixed TCP ports, and 45248 (their connection
//! qualifier) lies in Linux's ephemeral range (32768-60999), so on the host's network any
//! outgoing connection of a concurrent test can hold it and the server fails with "in use".
//! In a namespace of its own a test's ports are its alone.
//!
//! The namespace lives as long as a shell that `unshare --net` started, which reads its
//! stdin until EOF: dropping the [`PrivateNet`], or the test process dying, closes that pipe
//! and ends the shell, so no namespace outlives its test. Programs join it through
//! `nsenter --net=/proc/<shell>/ns/net`, which execs them in place (same pid, so killing
//! the child kills the program). Making a network namespace needs CAP_SYS_ADMIN (root, as
//! in CI); elsewhere the tests run on the host's network, as before, and say so.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};

/// A private network namespace, held open until drop.
pub struct PrivateNet {
    holder: Child,
    /// The holder's stdin: closing it ends the holder, and with it the namespace.
    hold: Option<ChildStdin>,
}

impl PrivateNet {
    /// A new namespace with `lo` up, or why none could be made.
    pub fn create() -> Result<PrivateNet, String> {
        let mut holder = Command::new("unshare")
            .args(["--net", "--", "sh", "-c", "ip link set lo up && echo up && read _"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run unshare (util-linux): {e}"))?;
        let hold = holder.stdin.take();
        let mut line = String::new();
        let _ = BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line);
        if line.trim() == "up" {
            return Ok(PrivateNet { holder, hold });
        }
        drop(hold);
        let mut why = String::new();
        let _ = holder.stderr.take().unwrap().read_to_string(&mut why);
        let _ = holder.wait();
        Err(format!("`unshare --net sh -c 'ip link set lo up'` failed: {}", why.trim()))
    }

    /// The namespace, as `nsenter --net=` takes it.
    pub fn ns_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.holder.id()))
    }

    /// The namespace's TCP socket tables (`/proc/<pid>/net/` shows that process's namespace).
    pub fn tcp_tables(&self) -> [PathBuf; 2] {
        let net = PathBuf::from(format!("/proc/{}/net", self.holder.id()));
        [net.join("tcp"), net.join("tcp6")]
    }

    /// `program args…` run inside the namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.ns_path().display())).arg("--").arg(program);
        cmd
    }
}

impl Drop for PrivateNet {
    fn drop(&mut self) {
        drop(self.hold.take());
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// A private namespace for one test, or `None` with a note (once per process) on why the
/// test shares the host's network.
pub fn private_net_or_host() -> Option<PrivateNet> {
    static NOTE: std::sync::Once = std::sync::Once::new();
    match PrivateNet::create() {
        Ok(net) => Some(net),
        Err(why) => {
            NOTE.call_once(|| {
                eprintln!(
                    "note: these tests run on the host's network ({why}); the stock programs' \
                     fixed ports can then collide with other sockets (run as root to isolate them)"
                )
            });
            None
        }
    }
}
