//! The results as a table for people or one JSON object for machines, with the ratios the
//! targets of issue 8 name.

use super::plan::{Level, Outcome, Row, Sizing, Test};
use std::fmt::Write;

/// Everything a run measured.
pub struct Report {
    /// This side's device.
    pub device: String,
    /// The server's device.
    pub server_device: String,
    /// The server's control address.
    pub server: String,
    /// The server's [`progress_thread_setting`] (the same as ours when it runs here).
    pub server_progress_thread: String,
    /// Both sides on this host (no arguments) rather than `--client`.
    pub local: bool,
    /// How each row was sized.
    pub sizing: Sizing,
    /// Wall time of the rows.
    pub seconds: f64,
    /// The rows, in the order they ran.
    pub rows: Vec<Row>,
}

/// How the DAT-level rows take their completions.
const DAT_COMPLETIONS: &str = "busy-polling dat_evd_dequeue (as dtest -p; no dat_evd_wait)";

/// Whether softhca's progress thread runs beside the tests on this side, as one word for
/// the control connection's greeting (the perf command turns the thread off unless the
/// user chose): `on`, `off` or `as-needed`.
pub fn progress_thread_setting() -> &'static str {
    match std::env::var(ferrodat_softhca::device::ENV_PROGRESS_THREAD).as_deref() {
        Ok("1") => "on",
        Ok("0") => "off",
        _ => "as-needed",
    }
}

/// What a side's [`progress_thread_setting`] means for the run (another word: a newer
/// server's, said as it is); `both`: the setting of both sides.
fn progress_thread_text(setting: &str, both: bool) -> String {
    let polling = if both { "both sides poll" } else { "the side polls" };
    match setting {
        "on" => "progress thread on at every device open (FERRODAT_SOFTHCA_PROGRESS_THREAD=1): \
                 it competes with the busy-polling sides for the cores"
            .into(),
        "off" => format!(
            "no progress thread (FERRODAT_SOFTHCA_PROGRESS_THREAD=0, the perf command's \
             default): {polling} all the time"
        ),
        "as-needed" => "progress thread as a DAT IA starts it (FERRODAT_SOFTHCA_PROGRESS_THREAD \
                        neither 0 nor 1): it competes with the busy-polling sides for the cores"
            .into(),
        other => format!("progress thread setting {other:?}"),
    }
}

/// Where both levels' buffers live, and what that means over softhca.
const BUFFERS: &str = "a memfd mapped shared (Pd::alloc_mr_shared, Lmr::alloc_shared): softhca places \
     RDMA WRITEs of 4 KiB and more straight into it, one copy; private memory takes the ring, \
     two copies (the two-copy pipeline row)";

/// One ratio: one a target names, or one that says how much of a target the machine
/// itself takes (the least software HCA against the floor, say).
struct Ratio {
    id: &'static str,
    what: &'static str,
    value: Option<f64>,
    /// The level the value was measured at (the target may name another).
    level: Level,
    /// The target, if the ratio has one.
    target: Option<&'static str>,
    /// Whether the value meets the target, when it can be told.
    met: Option<bool>,
}

impl Ratio {
    /// A ratio without a target: it explains the others.
    fn explaining(id: &'static str, what: &'static str, value: Option<f64>, level: Level) -> Self {
        Ratio { id, what, value, level, target: None, met: None }
    }
}

fn find(rows: &[Row], test: Test) -> Option<&Outcome> {
    rows.iter().find(|r| r.test == test).map(|r| &r.result)
}

fn ratios(rows: &[Row]) -> Vec<Ratio> {
    let lat = |t| find(rows, t).and_then(Outcome::median_ns);
    let bw = |t| find(rows, t).and_then(Outcome::mb_per_s);
    let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let dat8 = lat(Test::SendRecv(Level::Dat, 8));
    let driver8 = lat(Test::SendRecv(Level::Driver, 8));
    let send8_floor = div(dat8, lat(Test::Floor));
    let tcp_send8 = div(lat(Test::Tcp(8)), dat8);
    let bw_memcpy = div(bw(Test::WriteBw(Level::Driver, 1 << 20)), bw(Test::Memcpy(1 << 20)));
    let dat_driver = div(dat8, driver8);
    let least = lat(Test::LeastHca);
    let write_1m = bw(Test::WriteBw(Level::Driver, 1 << 20));
    let pipe = bw(Test::Pipeline(1 << 20));
    vec![
        Ratio {
            id: "send_recv_8_over_floor",
            what: "8 B SEND/RECV latency / shared-memory floor (medians)",
            value: send8_floor,
            level: Level::Dat,
            target: Some("<= 3"),
            met: send8_floor.map(|v| v <= 3.0),
        },
        Ratio::explaining(
            "least_hca_over_floor",
            "least software HCA / shared-memory floor (medians)",
            div(least, lat(Test::Floor)),
            Level::Baseline,
        ),
        Ratio::explaining(
            "send_recv_8_over_least_hca",
            "8 B SEND/RECV latency / least software HCA (medians)",
            div(dat8, least),
            Level::Dat,
        ),
        Ratio {
            id: "tcp_8_over_send_recv_8",
            what: "TCP 8 B ping-pong / 8 B SEND/RECV latency (medians)",
            value: tcp_send8,
            level: Level::Dat,
            target: Some(">= 5"),
            met: tcp_send8.map(|v| v >= 5.0),
        },
        Ratio {
            id: "rdma_write_bw_1m_over_memcpy",
            what: "RDMA WRITE bandwidth at 1 MiB / single-core memcpy at 1 MiB",
            value: bw_memcpy,
            level: Level::Driver,
            target: Some(">= 0.5"),
            met: bw_memcpy.map(|v| v >= 0.5),
        },
        Ratio::explaining(
            "pipeline_over_memcpy",
            "two-copy pipeline / single-core memcpy at 1 MiB",
            div(pipe, bw(Test::Memcpy(1 << 20))),
            Level::Baseline,
        ),
        Ratio::explaining(
            "rdma_write_bw_1m_over_pipeline",
            "RDMA WRITE bandwidth / two-copy pipeline at 1 MiB",
            div(write_1m, pipe),
            Level::Driver,
        ),
        Ratio {
            id: "dat_over_driver_send_recv_8",
            what: "DAT-level / driver-level 8 B SEND/RECV latency (medians)",
            value: dat_driver,
            level: Level::Dat,
            target: Some("<= 1.2"),
            met: dat_driver.map(|v| v <= 1.2),
        },
    ]
}

/// `123 ns`, `45.6 us`, `7.8 ms`.
fn ns(v: f64) -> String {
    if v < 10_000.0 {
        format!("{v:.0} ns")
    } else if v < 10_000_000.0 {
        format!("{:.1} us", v / 1e3)
    } else {
        format!("{:.1} ms", v / 1e6)
    }
}

fn sizing_text(s: Sizing) -> String {
    match s {
        Sizing::Duration(d) => format!(
            "{} s per row after a {} s warm-up",
            seconds_text(d.as_secs_f64(), 1),
            seconds_text(d.as_secs_f64() / 10.0, 2)
        ),
        Sizing::Iters(n) => {
            format!("{n} round trips or messages per row after {} to warm up", n / 10)
        }
    }
}

/// `v` seconds with at least `min` decimals and as many more (up to 6) as it takes to show
/// the value given: a `--duration` of 0.05 is not "0.1 s", nor 0.01 "0.0 s".
fn seconds_text(v: f64, min: usize) -> String {
    (min..6)
        .map(|decimals| format!("{v:.decimals$}"))
        .find(|text| text.parse::<f64>().is_ok_and(|shown| (shown - v).abs() <= v * 1e-9))
        .unwrap_or_else(|| format!("{v:.6}"))
}

/// The progress-thread lines of the table: one for both sides when they agree, else one
/// each (a server started by hand may have been told otherwise).
fn progress_thread_lines(ours: &str, server: &str) -> Vec<(&'static str, String)> {
    if server == ours {
        vec![("softhca", progress_thread_text(ours, true))]
    } else {
        vec![
            ("softhca here", progress_thread_text(ours, false)),
            ("softhca at the server", progress_thread_text(server, false)),
        ]
    }
}

/// The table.
pub fn table(r: &Report) -> String {
    let mut o = String::new();
    let where_ = if r.local {
        format!("two processes on this host, {} and {}", r.device, r.server_device)
    } else {
        format!("{} here, {} at {}", r.device, r.server_device, r.server)
    };
    let _ = writeln!(o, "ferrodat perf: {where_}; {}; {:.1} s", sizing_text(r.sizing), r.seconds);
    let _ = writeln!(
        o,
        "latency: half round trip (RDMA READ: the whole READ, as ib_read_lat); median, p99 \
         and min over samples, each the mean of {} operations",
        r.sizing.group()
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<9} {:<52} {:>10} {:>10} {:>10}",
        "level", "latency", "median", "p99", "min"
    );
    for row in &r.rows {
        if let Outcome::Latency { summary: s, .. } = row.result {
            let _ = writeln!(
                o,
                "{:<9} {:<52} {:>10} {:>10} {:>10}",
                row.test.level().name(),
                row.title,
                ns(s.median_ns),
                ns(s.p99_ns),
                ns(s.min_ns)
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{:<9} {:<52} {:>10} {:>10}", "level", "bandwidth", "MB/s", "Mmsg/s");
    for row in &r.rows {
        if let (Some(mb), Some(mm)) = (row.result.mb_per_s(), row.result.mmsg_per_s()) {
            let _ = writeln!(
                o,
                "{:<9} {:<52} {:>10.0} {:>10.4}",
                row.test.level().name(),
                row.title,
                mb,
                mm
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "driver: the QP posted to and its CQ polled directly; dat: the same test through \
         dat_ep_post_*,\n  completions by {DAT_COMPLETIONS}"
    );
    let _ = writeln!(o, "buffers: {}", wrap_note(BUFFERS, "buffers: ".len()));
    for (who, text) in progress_thread_lines(progress_thread_setting(), &r.server_progress_thread) {
        let _ = writeln!(o, "{who}: {}", wrap_note(&text, who.len() + 2));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "ratios (target; level measured; indented: the two factors of the ratio above):"
    );
    for x in ratios(&r.rows) {
        let value = match x.value {
            // Three decimals below 10: a ratio just short of its target shows how short
            // (0.497x), unless it misses by less than a thousandth.
            Some(v) if v < 10.0 => format!("{v:.3}x"),
            Some(v) => format!("{v:.2}x"),
            None => "-".into(),
        };
        let mut tail = vec![match x.target {
            Some(target) => format!("{target}; {}", x.level.name()),
            None => format!("no target; {}", x.level.name()),
        }];
        match x.met {
            Some(true) => tail.push("met".into()),
            Some(false) => tail.push("not met".into()),
            None => {}
        }
        // A ratio without a target is one factor of the target's ratio above it.
        let what = if x.target.is_some() { x.what.to_string() } else { format!("  {}", x.what) };
        let _ = writeln!(o, "  {what:<62} {value:>8}  ({})", tail.join("; "));
    }
    o
}

/// A JSON string literal.
fn jstr(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `note` broken into lines of at most 96 columns for a terminal (continuations indented
/// as the table's other notes), `first` being the columns its first line starts at.
fn wrap_note(note: &str, first: usize) -> String {
    let mut out = String::new();
    let mut column = first;
    for word in note.split(' ') {
        if column > 2 && column + 1 + word.len() > 96 {
            out.push_str("\n  ");
            column = 2;
        } else if !out.is_empty() {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += word.len();
    }
    out
}

/// A JSON number (`null` if not finite).
fn jnum(v: f64) -> String {
    if v.is_finite() { format!("{v}") } else { "null".into() }
}

/// The JSON object: one line.
pub fn json(r: &Report) -> String {
    let sizing = match r.sizing {
        Sizing::Duration(d) => format!("{{\"duration_s\":{}}}", jnum(d.as_secs_f64())),
        Sizing::Iters(n) => format!("{{\"iters\":{n}}}"),
    };
    let rows: Vec<String> = r
        .rows
        .iter()
        .map(|row| {
            let head = format!(
                "\"id\":{},\"level\":{},\"test\":{},\"bytes\":{}",
                jstr(&row.test.id()),
                jstr(row.test.level().name()),
                jstr(&row.title),
                row.test.bytes()
            );
            match row.result {
                Outcome::Latency { summary: s, samples, group } => format!(
                    "{{{head},\"kind\":\"latency\",\"half_round_trip\":{},\"median_ns\":{},\"p99_ns\":{},\"min_ns\":{},\"samples\":{samples},\"ops_per_sample\":{group}}}",
                    !matches!(row.test, Test::ReadLat(..)),
                    jnum(s.median_ns),
                    jnum(s.p99_ns),
                    jnum(s.min_ns)
                ),
                Outcome::Bandwidth { bytes, messages, seconds } => format!(
                    "{{{head},\"kind\":\"bandwidth\",\"mb_per_s\":{},\"mmsg_per_s\":{},\"messages\":{messages},\"bytes_moved\":{bytes},\"seconds\":{}}}",
                    jnum(row.result.mb_per_s().unwrap_or(f64::NAN)),
                    jnum(row.result.mmsg_per_s().unwrap_or(f64::NAN)),
                    jnum(seconds)
                ),
            }
        })
        .collect();
    let ratios: Vec<String> = ratios(&r.rows)
        .iter()
        .map(|x| {
            format!(
                "{{\"id\":{},\"what\":{},\"value\":{},\"level\":{},\"target\":{},\"met\":{}}}",
                jstr(x.id),
                jstr(x.what),
                x.value.map(jnum).unwrap_or_else(|| "null".into()),
                jstr(x.level.name()),
                x.target.map(jstr).unwrap_or_else(|| "null".into()),
                x.met.map(|m| m.to_string()).unwrap_or_else(|| "null".into())
            )
        })
        .collect();
    format!(
        "{{\"tool\":\"ferrodat perf\",\"version\":5,\"mode\":{},\"device\":{},\"server_device\":{},\"server\":{},\"sizing\":{sizing},\"seconds\":{},\"rows\":[{}],\"dat_completions\":{},\"buffers\":{},\"progress_thread\":{},\"server_progress_thread\":{},\"ratios\":[{}]}}\n",
        jstr(if r.local { "local" } else { "client" }),
        jstr(&r.device),
        jstr(&r.server_device),
        jstr(&r.server),
        jnum(r.seconds),
        rows.join(","),
        jstr(DAT_COMPLETIONS),
        jstr(BUFFERS),
        jstr(&progress_thread_text(progress_thread_setting(), false)),
        jstr(&progress_thread_text(&r.server_progress_thread, false)),
        ratios.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_progress_thread_line_when_both_sides_agree_else_one_each() {
        let both = progress_thread_lines("off", "off");
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].0, "softhca");
        assert!(both[0].1.contains("both sides poll all the time"), "{both:?}");
        let each = progress_thread_lines("off", "on");
        let who: Vec<&str> = each.iter().map(|(w, _)| *w).collect();
        assert_eq!(who, ["softhca here", "softhca at the server"]);
        assert!(each[0].1.contains("the side polls all the time"), "{each:?}");
        assert!(each[1].1.contains("on at every device open"), "{each:?}");
        let unknown = progress_thread_lines("off", "sometimes");
        assert!(unknown[1].1.contains("\"sometimes\""), "{unknown:?}");
    }

    #[test]
    fn the_heading_gives_the_duration_asked_for() {
        let text = |secs: f64| sizing_text(Sizing::Duration(Duration::from_secs_f64(secs)));
        assert_eq!(text(2.0), "2.0 s per row after a 0.20 s warm-up");
        assert_eq!(text(0.05), "0.05 s per row after a 0.005 s warm-up");
        assert_eq!(text(0.01), "0.01 s per row after a 0.001 s warm-up");
        assert_eq!(text(3600.0), "3600.0 s per row after a 360.00 s warm-up");
        assert_eq!(text(0.123456789), "0.123457 s per row after a 0.012346 s warm-up");
        assert_eq!(
            sizing_text(Sizing::Iters(1000)),
            "1000 round trips or messages per row after 100 to warm up"
        );
    }
}
