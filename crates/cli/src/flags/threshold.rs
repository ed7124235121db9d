//! `--threshold` and `--threshold-abort`: pass/fail rules checked on a result.

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ThresholdArgs {
    /// Pass/fail rule checked after the run, repeatable: p50|p90|p99|p999|pN|mean|max <=
    /// DURATION, errors <= N% (or a count), rps >= N. Every verdict is printed and kept in
    /// the JSON; exit 99 when one fails. E.g. --threshold 'p99<=50ms' --threshold 'errors<=0.1%'.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub threshold: Vec<String>,
    /// Also check the thresholds at every interval (on the figures so far, after any
    /// --warmup) and stop the run as soon as one fails (exit 99).
    #[arg(long = "threshold-abort", requires = "threshold")]
    pub threshold_abort: bool,
}
