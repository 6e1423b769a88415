//! The C probe: collects (C expression, Rust value) pairs, prints the C side with a compiled
//! program and compares.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

/// One compared item: a name for the report, the C expression that computes it and the
/// value Rust computed, with the width in bytes at which the two are compared.
pub struct Item {
    pub name: String,
    pub c_expr: String,
    pub rust_value: u64,
    pub width: usize,
}

pub struct Probe {
    includes: Vec<String>,
    items: Vec<Item>,
}

/// Masks a value to `width` bytes so that, say, a C `int` -1 and a Rust `u32::MAX` compare
/// equal, as they do on the wire.
fn mask(value: u64, width: usize) -> u64 {
    if width >= 8 { value } else { value & ((1u64 << (width * 8)) - 1) }
}

impl Probe {
    pub fn new(includes: &[&str]) -> Self {
        Probe { includes: includes.iter().map(|s| s.to_string()).collect(), items: Vec::new() }
    }

    /// Adds one item; used by the `check_*!` macros.
    pub fn push(&mut self, name: String, c_expr: String, rust_value: u64, width: usize) {
        self.items.push(Item { name, c_expr, rust_value: mask(rust_value, width), width });
    }

    fn c_source(&self) -> String {
        let mut src = String::new();
        for inc in &self.includes {
            writeln!(src, "#include <{inc}>").unwrap();
        }
        src.push_str("#include <stdio.h>\n#include <stddef.h>\n\n");
        src.push_str("#define FIELD_SIZE(T, f) sizeof(((T *)0)->f)\n\nint main(void) {\n");
        for (i, item) in self.items.iter().enumerate() {
            writeln!(src, "    printf(\"{i} %llu\\n\", (unsigned long long)({}));", item.c_expr)
                .unwrap();
        }
        src.push_str("    return 0;\n}\n");
        src
    }

    /// Compiles and runs the probe, then panics with every mismatch, if any.
    pub fn run_and_compare(&self) {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_layout_probe");
        std::fs::create_dir_all(&dir).unwrap();
        let src_path = dir.join("probe.c");
        let exe_path = dir.join("probe");
        std::fs::write(&src_path, self.c_source()).unwrap();

        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = Command::new(&cc)
            .args(["-std=gnu11", "-O0", "-w", "-o"])
            .arg(&exe_path)
            .arg(&src_path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}; install gcc"));
        assert!(
            out.status.success(),
            "the C probe {} does not compile against the system headers (are libibverbs-dev \
             and libdapl-dev installed? `.ci/run` installs them):\n{}",
            src_path.display(),
            String::from_utf8_lossy(&out.stderr)
        );

        let run = Command::new(&exe_path).output().expect("run the C probe");
        assert!(run.status.success(), "the C probe failed: {run:?}");
        let stdout = String::from_utf8(run.stdout).expect("probe output is ASCII");

        let mut c_values = vec![None; self.items.len()];
        for line in stdout.lines() {
            let (idx, value) = line.split_once(' ').expect("probe line is `index value`");
            let idx: usize = idx.parse().unwrap();
            c_values[idx] = Some(value.parse::<u64>().unwrap());
        }

        let mut mismatches = Vec::new();
        for (item, c) in self.items.iter().zip(&c_values) {
            let c = mask(c.expect("the probe printed every item"), item.width);
            if c != item.rust_value {
                let expr = if item.c_expr == item.name {
                    String::new()
                } else {
                    format!("   [{}]", item.c_expr)
                };
                mismatches.push(format!(
                    "  {}: C says {c} (0x{c:x}), Rust says {} (0x{:x}){expr}",
                    item.name, item.rust_value, item.rust_value
                ));
            }
        }
        println!(
            "compared {} items (struct sizes, field offsets, field sizes, constants) with the C headers; {} mismatches",
            self.items.len(),
            mismatches.len()
        );
        assert!(
            mismatches.is_empty(),
            "{} of {} layout items differ from the system C headers:\n{}",
            mismatches.len(),
            self.items.len(),
            mismatches.join("\n")
        );
    }
}

/// Returns the size of a field without needing a value of the struct: the closure is never
/// called, only its type is used.
pub fn field_size<T, F>(_: impl Fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// `check_struct!(probe, "C type", RustType { field, rust_field => "c.field.path", ... })`
/// compares the size of the type, and the offset and size of each listed field.
#[macro_export]
macro_rules! check_struct {
    ($p:expr, $c:literal, $t:ty { $($f:ident $(. $g:ident)* $(=> $cf:literal)?),* $(,)? }) => {{
        let p: &mut $crate::probe::Probe = $p;
        p.push(
            format!("sizeof({})", $c),
            format!("sizeof({})", $c),
            ::core::mem::size_of::<$t>() as u64,
            8,
        );
        $(
            let rust_path = stringify!($f $(. $g)*).replace(' ', "");
            #[allow(unused_mut, unused_assignments)]
            let mut c_path = rust_path.clone();
            $( c_path = $cf.to_string(); )?
            p.push(
                format!("offsetof({}, {})", $c, c_path),
                format!("offsetof({}, {})", $c, c_path),
                ::core::mem::offset_of!($t, $f $(. $g)*) as u64,
                8,
            );
            p.push(
                format!("sizeof({}.{})", $c, c_path),
                format!("FIELD_SIZE({}, {})", $c, c_path),
                // SAFETY: the closure is never called (only its type is used), so no union
                // field is ever read.
                $crate::probe::field_size(|s: &$t| unsafe { &s.$f $(. $g)* }) as u64,
                8,
            );
        )*
    }};
}

/// `check_const!(probe, C_NAME => rust::PATH, ...)` compares constants at the width of the
/// Rust value. The C side may be an enumerator, a macro or any constant expression.
#[macro_export]
macro_rules! check_const {
    ($p:expr, $($c:literal => $r:expr),* $(,)?) => {{
        let p: &mut $crate::probe::Probe = $p;
        $(
            let v = $r;
            p.push($c.to_string(), $c.to_string(), v as u64, ::core::mem::size_of_val(&v));
        )*
    }};
}
