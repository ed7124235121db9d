//! The decisive comparison's flags, shared by `compare --live` and `lab compare`: the
//! protocol's settings (`ProtocolArgs`) and `compare`'s `--live` switch with them (`LiveArgs`).

use anyhow::bail;
use std::time::Duration;
use webtune_model::parse_duration;

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
