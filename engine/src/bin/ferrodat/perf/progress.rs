//! The progress bar on stderr: one line redrawn in place on a terminal, one line per row
//! otherwise (a log stays readable).

use super::plan::Sizing;
use std::io::{IsTerminal, Write};
use std::time::Duration;

const WIDTH: usize = 24;

pub struct Progress {
    total: usize,
    tty: bool,
    /// Roughly how long a row takes, when the run is sized by time.
    per_row: Option<Duration>,
}

impl Progress {
    pub fn new(total: usize, sizing: Sizing) -> Progress {
        let per_row = match sizing {
            Sizing::Duration(d) => Some(d + d / 10 + Duration::from_millis(50)),
            Sizing::Iters(_) => None,
        };
        Progress { total, tty: std::io::stderr().is_terminal(), per_row }
    }

    /// Row `index` (from 0) called `title` starts.
    pub fn row(&mut self, index: usize, title: &str) {
        let filled = index * WIDTH / self.total.max(1);
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled));
        let left = self
            .per_row
            .map(|d| {
                format!(", about {:.0} s left", (d * (self.total - index) as u32).as_secs_f64())
            })
            .unwrap_or_default();
        let line = format!("[{bar}] {}/{} {title}{left}", index + 1, self.total);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K{line}");
        } else {
            let _ = writeln!(err, "ferrodat perf: {line}");
        }
        let _ = err.flush();
    }

    /// The run is over: clears the line on a terminal.
    pub fn finish(&mut self) {
        if self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}
