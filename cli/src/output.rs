//! Printing helpers shared by the commands.

use std::path::Path;

use gpuport_manifest_core::document::{DocumentReport, Opened, open};

use crate::{EXIT_INVALID, EXIT_USAGE};

/// Opens the document at `path` for a command that needs it valid: an I/O or usage error is
/// printed with `error:`, an invalid document with every problem; either gives the exit code.
pub fn open_valid(path: &Path) -> Result<Opened, u8> {
    let (report, opened) = match open(path) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(EXIT_USAGE);
        }
    };
    opened.ok_or_else(|| {
        print_report(&report, None);
        EXIT_INVALID
    })
}

/// `98.4 MB (98,362,432 bytes)`.
pub fn bytes(n: u64) -> String {
    let (value, unit) = match n {
        0..1_000 => return format!("{n} bytes"),
        1_000..1_000_000 => (n as f64 / 1e3, "kB"),
        1_000_000..1_000_000_000 => (n as f64 / 1e6, "MB"),
        _ => (n as f64 / 1e9, "GB"),
    };
    format!("{value:.1} {unit} ({} bytes)", grouped(n))
}

/// `98362432` → `98,362,432`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints a validation report for people: a ✓/✗ line per document, then each problem.
pub fn print_report(report: &DocumentReport, summary: Option<&str>) {
    let kind = report.kind.map(|k| format!(" ({k})")).unwrap_or_default();
    if report.is_valid() {
        let summary = summary.map(|s| format!(": {s}")).unwrap_or_default();
        println!("✓ {}{kind}{summary}", report.path.display());
    } else {
        println!(
            "✗ {}{kind}: {} problem(s)",
            report.path.display(),
            report.problems.len()
        );
        for p in &report.problems {
            println!("    {p}");
        }
    }
    for f in &report.ignored_fields {
        println!("    note: {f}: unknown field of a newer minor version, ignored");
    }
}

/// A spinner on stderr with the current stage and the time spent, drawn only on a terminal
/// (piped or redirected output stays exactly as without it). Cleared when dropped.
pub struct Stage {
    bar: Option<indicatif::ProgressBar>,
}

impl Stage {
    /// Starts with `message`; `quiet` draws nothing.
    pub fn start(message: &str, quiet: bool) -> Stage {
        use std::io::IsTerminal;
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        let stage = Stage { bar };
        stage.set(message);
        stage
    }

    /// Moves to the next stage.
    pub fn set(&self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_owned());
        }
    }

    /// Clears the spinner now.
    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.done();
    }
}
