//! What the lab commands (and the tuner) tell the user while a trial runs: the stack
//! starting, reaped leftovers, where it is ready, a live progress line per run, one line per
//! finished level of a sweep, and the stop. The trial itself (`webtune_lab::trial`) only
//! reports events; this is where they become words on stderr.

use crate::running::ProgressLine;
use webtune_engine::Progress;
use webtune_lab::trial::{Level, LevelResult, Target, TrialEvents};
use webtune_model::{ErrorKind, RunResult};

/// Narrates a trial on stderr.
pub struct Narrator {
    quiet: bool,
    /// One line per finished level (sweeps).
    level_lines: bool,
    /// Put before the progress line's own label, e.g. "trial 3/15 ".
    prefix: String,
    line: Option<ProgressLine>,
    /// The target's name, from `starting`.
    name: &'static str,
}

impl Narrator {
    /// `quiet` drops the progress line; `level_lines` prints a line per finished level.
    pub fn new(quiet: bool, level_lines: bool) -> Narrator {
        Narrator {
            quiet,
            level_lines,
            prefix: String::new(),
            line: None,
            name: "",
        }
    }

    fn end_line(&mut self) {
        if let Some(mut line) = self.line.take() {
            line.finish();
        }
    }
}

impl TrialEvents for Narrator {
    fn starting(&mut self, target: &Target) {
        self.name = target.name();
        if !matches!(target, Target::External { .. }) {
            eprintln!(
                "lab: starting {} ({})",
                target.name(),
                target.describe_settings()
            );
        }
    }

    fn reaped(&mut self, lines: &[String]) {
        for line in lines {
            eprintln!("lab: reaped a stack a killed webtune left: {line}");
        }
    }

    fn ready(&mut self, base_url: &str, detail: &str) {
        eprintln!("lab: {} ready at {base_url} ({detail})", self.name);
    }

    fn run_starting(&mut self, index: usize, count: usize, level: Level, run: u32, runs: u32) {
        self.end_line();
        let mut label = self.prefix.clone();
        if count > 1 {
            label.push_str(&format!("[{}/{count} {}] ", index + 1, level.label()));
        }
        if runs > 1 {
            label.push_str(&format!("run {run}/{runs} "));
        }
        self.line = Some(ProgressLine::new(&label, self.quiet));
    }

    fn progress(&mut self, progress: &Progress) {
        if let Some(line) = self.line.as_mut() {
            line.update(progress);
        }
    }

    fn level_done(&mut self, _index: usize, level: &LevelResult) {
        self.end_line();
        if self.level_lines {
            eprintln!("  {}", level_line(level.level, &level.result));
        }
    }

    fn stopped(&mut self, target: &Target) {
        self.end_line();
        match target {
            Target::Forum { .. } => eprintln!(
                "lab: {} and its database stopped; no process of them is left",
                target.name()
            ),
            _ => eprintln!("lab: {} stopped; no process of it is left", target.name()),
        }
    }
}

/// One finished level in a line: what seed 003's table holds, plus throughput and p99.
pub fn level_line(level: Level, r: &RunResult) -> String {
    let failed_checks = r.errors.get(ErrorKind::BodyCheck);
    format!(
        "{}: {} served, {:.1}/s, mean {:.1} ms, p99 {:.1} ms, errors {:.2}%{}",
        level.label(),
        r.responses,
        r.requests_per_s,
        r.latency.total.mean_us / 1000.0,
        r.latency.total.p99_us as f64 / 1000.0,
        r.error_ratio() * 100.0,
        if failed_checks > 0 {
            format!(" ({failed_checks} body checks failed)")
        } else {
            String::new()
        }
    )
}
