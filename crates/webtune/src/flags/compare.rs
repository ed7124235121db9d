//! The decisive comparison's protocol flags (`webtune_cli::flags::compare::ProtocolArgs`)
//! mapped onto `webtune_search::interleave::Settings`, for `compare --live` and `lab compare`.

use anyhow::anyhow;
use webtune_cli::flags::compare::ProtocolArgs;
use webtune_model::{LoadMode, RunSpec};
use webtune_search::interleave::block::Metric;
use webtune_search::interleave::Settings;

/// What the binary makes of `ProtocolArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait ProtocolArgsExt {
    /// The protocol's settings for load like `spec`'s: decided on `--decide-on`, else on
    /// throughput in closed loop and on p99 in open loop; `starts` as given, else as many as
    /// the budget holds for arms that can be restarted (`Settings::restartable_starts`).
    fn settings(&self, spec: &RunSpec, starts: Option<usize>) -> anyhow::Result<Settings>;
}

impl ProtocolArgsExt for ProtocolArgs {
    fn settings(&self, spec: &RunSpec, starts: Option<usize>) -> anyhow::Result<Settings> {
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
