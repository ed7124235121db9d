//! `webtune capacity`'s flags: the request flags and the search's.

use crate::flags::bench::RequestArgs;
use crate::flags::capacity::SearchArgs;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune capacity http://127.0.0.1:8080/ --slo 'p99<=100ms' --slo 'errors<=0.1%'\n  \
    webtune capacity URL --slo 'p99<=50ms' -c 500 --step-duration 10s --json cap.json --html cap.html\n\
    Open loop at growing rates (doubling from --start-rate until an SLO breaks, then bisection to\n\
    --precision, then the boundary rate once more): the capacity is the highest rate at which every\n\
    SLO held, latency measured from each request's intended start. A step where the generator was\n\
    the limit never counts. The search stops at a step that finds the target gone (every connect\n\
    refused), exit 3. Exit 5 when no rate met the SLOs (docs/capacity.md).")]
pub struct CapacityArgs {
    /// The URL to load.
    pub url: String,
    /// The most connections opened to keep each step's schedule (a request due while all are
    /// busy waits, and the wait counts).
    #[arg(short = 'c', long = "connections", default_value_t = webtune_model::spec::OPEN_LOOP_CONNECTIONS)]
    pub connections: u32,
    /// How intended start times are spaced: uniform or poisson.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}
