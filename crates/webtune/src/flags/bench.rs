//! Bench's flags (`webtune_cli::flags::bench`: `BenchArgs`, `RequestArgs`) mapped onto a
//! `RunSpec` (`to_spec`, `apply`; what the values mean is `webtune_model::flag_values`) and
//! onto the engine's `Workload`, for every command that sends HTTP load.

use crate::output;
use anyhow::Context;
use webtune_engine::Workload;
use webtune_model::{ProbeSpec, RunSpec, StatusRanges, TlsOptions};

use crate::sharding::ShardArgsExt;
use webtune_cli::flags::bench::{BenchArgs, RequestArgs};
pub use webtune_engine::available_cores;
use webtune_model::flag_values::{connections_for, parse_header};
pub use webtune_model::flag_values::{load_mode, parse_stages, stop_condition};

/// What the binary makes of `RequestArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait RequestArgsExt {
    /// Fill in everything these flags decide.
    fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()>;
    /// What the run sends: the `--scenario` file, parsed, or the URL's own request.
    fn workload(&self) -> anyhow::Result<Workload>;
}

impl RequestArgsExt for RequestArgs {
    fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()> {
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path)
                .with_context(|| format!("cannot read --body-file {}", path.display()))?,
            (None, None) => Vec::new(),
        };
        spec.method = self.method.clone();
        spec.headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        spec.body_bytes = body.len() as u64;
        spec.body = body;
        spec.threads = self.threads.unwrap_or_else(available_cores);
        spec.keepalive = !self.no_keepalive;
        spec.http10 = self.http10;
        spec.max_requests_per_conn = self.max_requests_per_conn;
        spec.connect_timeout_ms = self.connect_timeout.as_millis() as u64;
        spec.timeout_ms = self.timeout.as_millis() as u64;
        spec.connect_to = self.connect_to.clone();
        spec.expect_status = StatusRanges::parse(&self.expect_status)
            .map_err(|e| anyhow::anyhow!("--expect-status: {e}"))?
            .into_pairs();
        spec.interval_ms = self.interval.as_millis() as u64;
        spec.warmup_s = self.warmup.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        spec.cooldown_s = self.cooldown.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        spec.probe = self.probe.as_ref().map(|url| ProbeSpec {
            url: url.clone(),
            rate_per_s: self.probe_rate,
        });
        spec.tls = TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.as_ref().map(|p| p.display().to_string()),
            no_resume: self.no_tls_resume,
        };
        spec.http2 = self.http2;
        spec.http3 = self.http3;
        spec.zero_rtt = self.zero_rtt;
        spec.streams = self.streams;
        spec.io = self.io;
        if let Ok((_, Some(why))) = webtune_engine::resolve_io(self.io) {
            eprintln!("webtune: --io auto: io_uring is not available ({why}); using epoll");
        }
        Ok(())
    }

    fn workload(&self) -> anyhow::Result<Workload> {
        match &self.scenario {
            Some(path) => Workload::from_scenario_file(path).map_err(|e| anyhow::anyhow!("{e}")),
            None => Ok(Workload::request()),
        }
    }
}

/// What the binary makes of `BenchArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait BenchArgsExt {
    /// The run these flags describe, against `url`, checked by `RunSpec::validate` (a spec
    /// that would measure nothing is refused here, before anything starts).
    fn to_spec(&self, url: &str) -> anyhow::Result<RunSpec>;
}

impl BenchArgsExt for BenchArgs {
    fn to_spec(&self, url: &str) -> anyhow::Result<RunSpec> {
        let stages = match &self.stages {
            Some(text) => parse_stages(text)?,
            None => Vec::new(),
        };
        let connections = connections_for(self.connections, &stages, self.rate);
        let mut spec = RunSpec {
            url: url.to_string(),
            connections,
            stop: stop_condition(self.requests, self.duration),
            load: load_mode(self.rate, &self.arrival),
            stages,
            count_journeys: self.count == "journeys",
            ..RunSpec::default()
        };
        self.request.apply(&mut spec)?;
        self.sharding.apply(&mut spec)?;
        spec.validate()?;
        Ok(spec)
    }
}

/// Check `--json` and `--html` before any load starts (see `output::check`).
pub fn check_outputs(args: &BenchArgs) -> anyhow::Result<()> {
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::compare::ProtocolArgsExt;
    use std::time::Duration;
    use webtune_cli::flags::bench::bench_args;
    use webtune_cli::flags::compare::ProtocolArgs;
    use webtune_search::interleave::block::Metric;

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
        let s = ProtocolArgs::default().settings(&spec, Some(1)).unwrap();
        assert_eq!((s.decide_on, s.starts), (Metric::P99, 1));
        // Arms that can be restarted: a start per 15 pairs of the budget (3 minutes: 6).
        let s = ProtocolArgs::default().settings(&spec, None).unwrap();
        assert_eq!(s.starts, 6);
        let p = ProtocolArgs {
            block: Some(Duration::ZERO),
            ..ProtocolArgs::default()
        };
        let e = p.settings(&spec, Some(1)).unwrap_err().to_string();
        assert!(e.starts_with("--block: "), "{e}");
    }
}
