//! `webtune compare --live URL_A URL_B [-- BENCH FLAGS]` and the flags it shares with
//! `lab compare`: the protocol's settings, the bench flags after `--` (parsed by bench's own
//! parser), and the run-and-report step both commands end with. The protocol, its
//! statistics and its words are `webtune_tune::interleave`'s; the blocks are run by
//! `webtune_tuner::interleaved`.

use crate::bench_cmd::BenchArgs;
use crate::output::{self, Outputs};
use anyhow::{anyhow, bail};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_model::{parse_duration, LoadMode, RunSpec};
use webtune_tune::interleave::block::Metric;
use webtune_tune::interleave::render::Report;
use webtune_tune::interleave::Settings;
use webtune_tuner::interleaved::{self, ArmLoad};

/// The protocol's flags, shared by `compare --live` and `lab compare`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProtocolArgs {
    /// Length of one block of load to one arm [default: 1s].
    #[arg(long = "block", value_parser = parse_duration, value_name = "DURATION")]
    pub block: Option<Duration>,
    /// The first part of each block, not counted (connections open, caches settle)
    /// [default: 100ms].
    #[arg(long = "discard", value_parser = parse_duration, value_name = "DURATION")]
    pub discard: Option<Duration>,
    /// Say "same" once the interval of B/A lies within ±this [default: 2%].
    #[arg(long = "same-within", value_parser = webtune_model::units::parse_percent,
          value_name = "PERCENT")]
    pub same_within: Option<f64>,
    /// Time budget: stop undecided when it ends [default: 3m].
    #[arg(long = "budget", value_parser = parse_duration, value_name = "DURATION")]
    pub budget: Option<Duration>,
    /// False-positive rate, held however often the interval is looked at [default: 0.05].
    #[arg(long = "alpha", value_name = "ALPHA")]
    pub alpha: Option<f64>,
    /// Seed of the blocks' order within each pair [default: 1].
    #[arg(long = "seed", value_name = "N")]
    pub seed: Option<u64>,
    /// Write the comparison (schema webtune.compare-live/1, every block kept) to FILE or "-".
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Bench flags for both arms' load, after `--`: -c, --rate, -H, --http2, … (not -d or -n:
    /// the blocks set the length); `lab compare`: and the path to load, e.g. /cpu/2000.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub bench: Vec<String>,
}

/// `compare`'s live mode.
#[derive(clap::Args, Debug, Clone)]
pub struct LiveArgs {
    /// Compare two running servers, URL_A and URL_B, live: load alternating between them in
    /// short blocks until the answer is known.
    #[arg(long = "live")]
    pub live: bool,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

impl LiveArgs {
    /// Saved results take none of the live flags.
    pub fn refuse_without_live(&self) -> anyhow::Result<()> {
        let p = &self.protocol;
        if p.block.is_some()
            || p.discard.is_some()
            || p.same_within.is_some()
            || p.budget.is_some()
            || p.alpha.is_some()
            || p.seed.is_some()
            || p.json.is_some()
            || !p.bench.is_empty()
        {
            bail!("--block, --budget, --json and the other protocol flags go with --live");
        }
        Ok(())
    }
}

/// Bench's own parser, for the flags after `--`.
#[derive(Parser, Debug)]
#[command(name = "webtune compare --live URL_A URL_B --", no_binary_name = true)]
struct BenchFlags {
    #[command(flatten)]
    bench: BenchArgs,
}

/// The bench flags after `--`, checked: nothing that sets a length, a URL or an output.
pub fn bench_args(flags: &[String]) -> anyhow::Result<BenchArgs> {
    let b = bench_args_with_path(flags)?;
    if b.url.is_some() {
        bail!("bench flags after --: no URL there (the arms are given before --)");
    }
    Ok(b)
}

/// As `bench_args`, a path to load allowed (`lab compare`: `-- -c 20 /cpu/2000`).
pub fn bench_args_with_path(flags: &[String]) -> anyhow::Result<BenchArgs> {
    let parsed = BenchFlags::try_parse_from(flags).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        anyhow!("bench flags after --: {first}")
    })?;
    let b = parsed.bench;
    if b.duration.is_some() || b.requests.is_some() || b.stages.is_some() {
        bail!("bench flags after --: -d, -n and --stages have no place (--block and --budget set the length)");
    }
    if b.output.json.is_some() || b.output.html.is_some() || b.output.csv.is_some() {
        bail!("bench flags after --: outputs are compare's own (--json before --)");
    }
    if b.output.repeat > 1 {
        bail!("bench flags after --: --repeat has no place (the blocks repeat)");
    }
    Ok(b)
}

impl ProtocolArgs {
    /// The protocol's settings for load like `spec`'s: decided on throughput in closed loop,
    /// on p99 in open loop.
    pub fn settings(&self, spec: &RunSpec, starts: usize) -> anyhow::Result<Settings> {
        let decide_on = match spec.load {
            LoadMode::Open { .. } => Metric::P99,
            LoadMode::Closed => Metric::Throughput,
        };
        let mut s = Settings::new(decide_on);
        if let Some(b) = self.block {
            s.block_s = b.as_secs_f64();
        }
        if let Some(d) = self.discard {
            s.discard_s = d.as_secs_f64();
        }
        if let Some(x) = self.same_within {
            s.same_within = x;
        }
        if let Some(b) = self.budget {
            s.budget_s = b.as_secs_f64();
        }
        if let Some(a) = self.alpha {
            s.alpha = a;
        }
        if let Some(seed) = self.seed {
            s.seed = seed;
        }
        s.starts = starts;
        s.validate().map_err(|e| {
            let flag = if e.contains("block must") {
                "--block"
            } else if e.contains("discarded") {
                "--discard"
            } else if e.contains("alpha") {
                "--alpha"
            } else if e.contains("budget") {
                "--budget"
            } else {
                "--starts"
            };
            anyhow!("{flag}: {e}")
        })?;
        Ok(s)
    }
}

/// `compare --live URL_A URL_B`.
pub fn run_urls(urls: &[PathBuf], args: &LiveArgs, html: Option<&str>) -> anyhow::Result<i32> {
    let [a, b] = urls else {
        bail!(
            "compare --live takes two URLs, A then B (got {})",
            urls.len()
        );
    };
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let bench = bench_args(&args.protocol.bench)?;
    let spec_a = bench.to_spec(&a)?;
    let spec_b = bench.to_spec(&b)?;
    let settings = args.protocol.settings(&spec_a, 1)?;
    let workload = bench.request.workload()?;
    let arms = [
        ArmLoad {
            spec: spec_a,
            workload: workload.clone(),
            server_pids: Vec::new(),
        },
        ArmLoad {
            spec: spec_b,
            workload,
            server_pids: Vec::new(),
        },
    ];
    let notes = vec![
        "each block is a short run of its own: connections to the arm open in its discarded \
         first part, and the idle arm holds none; one uncounted block to each arm first"
            .to_string(),
        "other CPU includes both servers' (compare --live does not know their processes)"
            .to_string(),
    ];
    measure_and_report(
        (&a, &b),
        arms,
        settings,
        (args.protocol.json.as_deref(), html),
        &mut |_| Err("compare --live cannot restart the servers".to_string()),
        notes,
    )
}

/// Run the comparison, print the report, write `--json`; the exit status: 0 decided, 1
/// undecided, 130 interrupted (what was measured still printed and written).
pub fn measure_and_report(
    names: (&str, &str),
    arms: [ArmLoad; 2],
    settings: Settings,
    (json, html): (Option<&str>, Option<&str>),
    restart: &mut dyn FnMut(usize) -> Result<[interleaved::Restarted; 2], String>,
    notes: Vec<String>,
) -> anyhow::Result<i32> {
    output::check_all([("--json", json), ("--html", html)])?;
    let control = crate::signals::stop_token();
    let outcome = interleaved::run(arms, settings, &control, restart, &mut |line| {
        eprintln!("webtune: {line}")
    })
    .map_err(|e| anyhow!(e))?;
    report(names, &outcome, (json, html), notes)
}

/// Print the comparison's report and write `--json`; the exit status: 0 decided, 1
/// undecided, 130 interrupted.
pub fn report(
    names: (&str, &str),
    outcome: &interleaved::Outcome,
    (json, html): (Option<&str>, Option<&str>),
    notes: Vec<String>,
) -> anyhow::Result<i32> {
    let mut report = Report::new(
        names,
        &outcome.protocol,
        outcome.elapsed_s,
        outcome.interrupted,
    );
    report.notes = notes;
    let mut outputs = Outputs::new();
    if let Some(dest) = json {
        let text = serde_json::to_string_pretty(&report)? + "\n";
        outputs.file("--json", dest, &text);
    }
    if let Some(dest) = html {
        outputs.file(
            "--html",
            dest,
            &webtune_tune::interleave::html::render(&report),
        );
    }
    if json != Some("-") {
        // `--json -` is the whole of stdout: the text would break it.
        outputs.stdout(&report.text());
    }
    let own = if outcome.interrupted || crate::signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else if report.decided() {
        crate::exit::SUCCESS
    } else {
        crate::exit::UNDECIDED
    };
    Ok(outputs.exit_code(own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_flags_are_benchs_own_and_lengths_are_refused() {
        let flags = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let b = bench_args(&flags("-c 20 -H X-A:1")).unwrap();
        assert_eq!(b.connections, Some(20));
        let e = bench_args(&flags("-d 10s")).unwrap_err().to_string();
        assert!(e.contains("--block"), "{e}");
        let e = bench_args(&flags("--nonsense")).unwrap_err().to_string();
        assert!(
            e.starts_with("bench flags after --: ") && !e.contains('\n'),
            "{e}"
        );
        let e = bench_args(&flags("http://x/")).unwrap_err().to_string();
        assert!(e.contains("no URL"), "{e}");
        // Open loop decides on p99.
        let b = bench_args(&flags("--rate 100")).unwrap();
        let spec = b.to_spec("http://127.0.0.1:1/").unwrap();
        let s = ProtocolArgs::default().settings(&spec, 1).unwrap();
        assert_eq!(s.decide_on, Metric::P99);
        let p = ProtocolArgs {
            block: Some(Duration::ZERO),
            ..ProtocolArgs::default()
        };
        let e = p.settings(&spec, 1).unwrap_err().to_string();
        assert!(e.starts_with("--block: "), "{e}");
    }
}
