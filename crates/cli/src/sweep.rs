//! `webtune sweep`'s flags.

use crate::flags::bench::RequestArgs;
use crate::output_flags::{OutputFlags, OutputHelp};
use std::time::Duration;
use webtune_model::parse_duration;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune sweep http://127.0.0.1:8080/ -c 8,32,128,256,512,1024 -d 10s --json sweep.json\n  \
    webtune sweep http://127.0.0.1:8080/ -c 1,2,4,8 -n 10000 --html sweep.html\n  \
    webtune sweep http://127.0.0.1:8080/ --rates 1000,2000,4000,8000 -d 10s --warmup 2s\n\
    The knee is the level after which throughput grows by less than 5% while p99 keeps growing.\n\
    A level that stalled in its measured window (not its warm-up), was cut short, or where the\n\
    generator was the limit is left out of it, and marked so in the table.\n\
    Load flags and defaults are bench's (no warm-up, no cool-down, no pause): this sweeps a\n\
    server you run, already warm. `webtune lab sweep` starts cold servers and so defaults to\n\
    --warmup 2s --cooldown 1s --pause 1s (seed 003's protocol).")]
pub struct SweepArgs {
    /// The URL to load: http:// or https:// (HTTP/1.1; --http2 for h2, or h2c over http://).
    pub url: String,
    /// Connection levels, comma-separated (closed loop), e.g. 8,32,128,256.
    #[arg(
        short = 'c',
        long = "connections",
        value_delimiter = ',',
        value_name = "N,N,…",
        conflicts_with = "rates"
    )]
    pub connections: Vec<u32>,
    /// Request rates per second, comma-separated (open loop), e.g. 1000,2000,4000.
    #[arg(long = "rates", value_delimiter = ',', value_name = "R,R,…")]
    pub rates: Vec<f64>,
    /// Open loop: the most connections opened at each rate level (a request due while all
    /// are busy waits, and the wait counts).
    #[arg(long = "rate-connections", default_value_t = webtune_model::spec::OPEN_LOOP_CONNECTIONS)]
    pub rate_connections: u32,
    /// Open loop: how intended start times are spaced.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    /// Length of each level's run (e.g. 10s, 500ms, 1m30s). Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, conflicts_with = "requests",
          value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// Requests per level instead of a duration.
    #[arg(short = 'n', long = "requests")]
    pub requests: Option<u64>,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Pause between levels, letting the server settle (e.g. 1s).
    #[arg(long = "pause", default_value = "0s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub pause: Duration,
    #[command(flatten)]
    pub output: OutputFlags<SweepOutput>,
}

/// The help of sweep's output flags.
#[derive(Debug, Clone)]
pub struct SweepOutput;

impl OutputHelp for SweepOutput {
    const JSON: &'static str =
        "Write the sweep (every run) as JSON, schema webtune.sweep/1, to FILE or \"-\"";
    const HTML: &'static str = "Write the HTML report (table, plots, every level) to FILE";
    const CSV: Option<&'static str> =
        Some("Also write the table as CSV (one line per level) to FILE");
    const REPEAT: Option<&'static str> = Some(
        "Run each level N times and keep every run's summary (as bench --repeat does); the \
         level's figures are all its runs merged",
    );
    const QUIET: &'static str = "No progress line, no per-level lines and no table (the files \
        are still written; errors still go to stderr)";
}
