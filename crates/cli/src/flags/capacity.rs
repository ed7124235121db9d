//! The capacity search's flags, shared by `capacity` and `lab capacity`.

use crate::output_flags::{OutputFlags, OutputHelp};
use std::time::Duration;
use webtune_model::parse_duration;

/// The search's flags, shared by `capacity` and `lab capacity`.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// A service-level objective every step must meet (repeatable), in the --threshold
    /// grammar: 'p99<=100ms', 'p999<=1s', 'mean<=20ms', 'errors<=0.1%'.
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,
    /// The first rate tried, requests/s; the search doubles it until an SLO breaks.
    #[arg(long = "start-rate", default_value_t = 100.0, value_name = "REQ/S")]
    pub start_rate: f64,
    /// When the first rate already breaks an SLO, halve down to this rate at most.
    #[arg(long = "min-rate", default_value_t = 1.0, value_name = "REQ/S")]
    pub min_rate: f64,
    /// Never try above this rate.
    #[arg(long = "max-rate", value_name = "REQ/S")]
    pub max_rate: Option<f64>,
    /// Stop bisecting when the highest held and the lowest broken rate are this close.
    #[arg(long = "precision", default_value = "5%", value_parser = webtune_model::units::parse_percent,
          value_name = "PCT")]
    pub precision: f64,
    /// Steps at most (the boundary's repeat included).
    #[arg(long = "max-steps", default_value_t = 30, value_name = "N")]
    pub max_steps: u32,
    /// Length of every step [default: 10s].
    #[arg(short = 'd', long = "step-duration", value_parser = parse_duration,
          value_name = "DURATION")]
    pub step_duration: Option<Duration>,
    /// Rest between steps, so the server drains what an overloaded step queued.
    #[arg(long = "pause", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub pause: Duration,
    #[command(flatten)]
    pub output: OutputFlags<CapacityOutput>,
}

/// The help of the search's output flags (`capacity`, `lab capacity`).
#[derive(Debug, Clone)]
pub struct CapacityOutput;

impl OutputHelp for CapacityOutput {
    const JSON: &'static str = "Write the search (every step's full result) as JSON, schema \
        webtune.capacity/1, to FILE or \"-\"";
    const HTML: &'static str = "Write the HTML report (table, latency against rate with the SLO \
        line and the capacity marked, every step) to FILE";
    const QUIET: &'static str =
        "No progress line, no step lines and no table (files are still written)";
}
