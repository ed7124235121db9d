//! `--shard i/n` and `--start-at TIME` on the command line: parsing them into the spec
//! (`RunSpec::shard`, `RunSpec::start_at_unix_ms`) and the words a user sees about them.
//! The shares themselves are the model's (`webtune_model::shard`), the wait the engine's.

use anyhow::Context;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use webtune_model::{parse_duration, RunSpec, Shard};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ShardArgs {
    /// Run shard I of N of the test: -c, --rate, -n and --stages describe the whole test
    /// and this run takes its share (in open loop every N-th scheduled arrival). Merge the
    /// shards' --json results with `webtune merge`. I counts from 1.
    #[arg(long = "shard", value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Wait for this wall-clock time before starting, so that shards on several machines
    /// start together: RFC 3339 (2026-12-01T10:00:00Z), Unix milliseconds, or +DURATION
    /// from now (+5s).
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
}

impl ShardArgs {
    /// Put the shard and the start time into `spec`.
    pub fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()> {
        spec.shard = self.shard;
        spec.start_at_unix_ms = match &self.start_at {
            Some(text) => Some(parse_start_at(text, now_unix_ms())?),
            None => None,
        };
        Ok(())
    }
}

fn now_unix_ms() -> u64 {
    webtune_engine::clock::now_unix_ms() as u64
}

/// Parse `--start-at`: RFC 3339, Unix milliseconds (all digits), or "+DURATION" after `now`.
pub fn parse_start_at(text: &str, now_ms: u64) -> anyhow::Result<u64> {
    let t = text.trim();
    let hint = "write e.g. 2026-12-01T10:00:00Z, 1796119200000 (Unix ms) or +5s";
    if let Some(after) = t.strip_prefix('+') {
        let d = parse_duration(after).map_err(|e| anyhow::anyhow!("--start-at {t:?}: {e}"))?;
        return Ok(now_ms + d.as_millis() as u64);
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .ok()
            .with_context(|| format!("--start-at {t:?} is too large; {hint}"));
    }
    let when = OffsetDateTime::parse(t, &Rfc3339)
        .map_err(|_| anyhow::anyhow!("--start-at {t:?} is not a time; {hint}"))?;
    let ms = when.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).with_context(|| format!("--start-at {t:?} is before 1970"))
}

/// A warning when the start time has passed already (the shard starts at once, late).
pub fn late_warning(spec: &RunSpec) -> Option<String> {
    let at = spec.start_at_unix_ms?;
    let now = now_unix_ms();
    (now > at + 1000).then(|| {
        format!(
            "--start-at was {:.1}s ago: starting now; this shard's start will be skewed",
            (now - at) as f64 / 1000.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_parse_in_all_three_forms() {
        let now = 1_700_000_000_000;
        assert_eq!(
            parse_start_at("2026-12-01T10:00:00Z", now).unwrap(),
            1_796_119_200_000
        );
        assert_eq!(
            parse_start_at("2026-12-01T11:00:00.250+01:00", now).unwrap(),
            1_796_119_200_250
        );
        assert_eq!(
            parse_start_at("1796119200000", now).unwrap(),
            1_796_119_200_000
        );
        assert_eq!(parse_start_at("+5s", now).unwrap(), now + 5000);
        for bad in ["tomorrow", "+5x", "2026-12-01", "1969-12-31T23:59:59Z", ""] {
            let e = parse_start_at(bad, now).expect_err(bad).to_string();
            assert!(e.starts_with("--start-at"), "{e}");
        }
    }
}
