//! The decisive comparison's flags, shared by `compare --live` and `lab compare`: the
//! protocol's settings (`ProtocolArgs`, mapped onto `webtune_search::interleave::Settings`),
//! and `compare`'s `--live` switch with them (`LiveArgs`).

use anyhow::{anyhow, bail};
use std::time::Duration;
use webtune_model::{parse_duration, LoadMode, RunSpec};
use webtune_search::interleave::block::Metric;
use webtune_search::interleave::Settings;

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
    /// The metric that decides: throughput, p50, p90, p99 or errors [default: throughput in
    /// closed loop, p99 with --rate]. Chosen before the run, so the false-positive rate
    /// holds; every metric's interval is reported either way.
    #[arg(long = "decide-on", value_name = "METRIC")]
    pub decide_on: Option<String>,
    /// Write the comparison (schema webtune.compare-live/1, every block kept) to FILE or "-".
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Bench flags for both arms' load, after `--`: -c, --rate, -H, --http2, … (not -d or -n:
    /// the blocks set the length); `lab compare`: and the path to load, e.g. /cpu/2000.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub bench: Vec<String>,
}

impl ProtocolArgs {
    /// The protocol's settings for load like `spec`'s: decided on `--decide-on`, else on
    /// throughput in closed loop and on p99 in open loop; `starts` as given, else as many as
    /// the budget holds for arms that can be restarted (`Settings::restartable_starts`).
    pub fn settings(&self, spec: &RunSpec, starts: Option<usize>) -> anyhow::Result<Settings> {
        let decide_on = match &self.decide_on {
            Some(name) => parse_metric(name).map_err(|e| anyhow!("--decide-on: {e}"))?,
            None => match spec.load {
                LoadMode::Open { .. } => Metric::P99,
                LoadMode::Closed => Metric::Throughput,
            },
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
        s.starts = starts.unwrap_or_else(|| s.restartable_starts());
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

fn parse_metric(text: &str) -> Result<Metric, String> {
    Metric::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
        format!("{text:?} is not a metric: use one of {}", names.join(", "))
    })
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
