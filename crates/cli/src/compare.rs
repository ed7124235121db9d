//! `webtune compare`'s flags: saved results, or two URLs with `--live`.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune compare before.json after.json\n  \
    webtune compare default.json tuned.json tuned2.json --html compare.html\n  \
    webtune compare main.json pr.json --threshold 'p99 <= +10%' --threshold 'rps >= -5%'\n  \
    webtune compare --live http://127.0.0.1:8080/ http://127.0.0.1:8081/ -- -c 20\n  \
    webtune compare --live URL_A URL_B --budget 1m --json ab.json -- --rate 2000 -c 50\n\
    Results saved by `webtune bench --repeat N --json FILE` carry N repeats: compare then gives a\n\
    95% confidence interval (Welch's t) for each difference, or says there is no significant one.\n\
    --live loads two running servers in alternating blocks (each pair's order drawn at random),\n\
    the bench flags after -- applied to both, until an always-valid 95% interval of B/A decides\n\
    (throughput in closed loop, p99 with --rate) or the budget ends. Exit 0 decided, 1\n\
    undecided, 2 bad input, 130 interrupted (what was measured is still written). See\n\
    docs/tuning.md.")]
pub struct CompareArgs {
    /// Results saved with --json; the first is the baseline, the order is the column order.
    /// With --live: the two URLs, A then B.
    #[arg(required = true, num_args = 1.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub live: crate::flags::compare::LiveArgs,
    /// Also write the comparison as a self-contained HTML page (with --live: each block's
    /// figure of both arms over time, and the interval narrowing pair by pair).
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// A regression gate, repeatable: every result after the first is checked, a relative
    /// limit ('p99 <= +10%', 'rps >= -5%') against the first. Exit 99 when one fails.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub threshold: Vec<String>,
}
