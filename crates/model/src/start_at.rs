//! `--start-at TIME` (shards on several machines starting together): the three forms it is
//! written in, the range it must fall in, the words a user sees while a shard waits or when
//! it starts late, and the run id a shard records. Pure: the caller gives the clock's `now`
//! (the engine's `clock::now_unix_ms`) and the engine does the wait.
//!
//! RFC 3339 with the `time` crate (its well-known `Rfc3339` format) rather than by hand.

use crate::{derived_run_id, parse_duration, RunSpec};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A `--start-at` that is not a time, or not one in range, in one line naming the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StartAtError(pub String);

/// The run id a shard's result records: `--run-id` given, else derived from an absolute
/// `--start-at` (a relative one, "+5s", differs between shards launched a moment apart),
/// else none. Not a shard: none.
pub fn shard_run_id(
    spec: &RunSpec,
    run_id: Option<&str>,
    start_at: Option<&str>,
) -> Option<String> {
    spec.shard?;
    let absolute = start_at.is_some_and(|t| !t.trim().starts_with('+'));
    match run_id {
        Some(id) => Some(id.to_string()),
        None if absolute => derived_run_id(spec),
        None => None,
    }
}

/// How far back a `--start-at` may be (it then starts at once, late, with a warning).
const MOST_PAST_MS: u64 = 24 * 3600 * 1000;
/// How far ahead a `--start-at` may be: shards are started for a test about to run, and a
/// time further ahead is a typo (a year, a unit) more likely than a plan.
const MOST_AHEAD_MS: u64 = 7 * 24 * 3600 * 1000;

/// Parse `--start-at`: RFC 3339, Unix milliseconds (all digits), or "+DURATION" after `now`.
/// A time more than a day before `now_ms` or more than 7 days after it is refused, naming
/// the range.
pub fn parse_start_at(text: &str, now_ms: u64) -> Result<u64, StartAtError> {
    let t = text.trim();
    let hint = "write e.g. 2026-12-01T10:00:00Z, 1796119200000 (Unix ms) or +5s";
    let earliest = now_ms.saturating_sub(MOST_PAST_MS);
    let latest = now_ms.saturating_add(MOST_AHEAD_MS);
    let out_of_range = || {
        StartAtError(format!(
            "--start-at {t:?} is out of range: give a time from 1 day ago to 7 days ahead \
             ({} … {})",
            rfc3339(earliest),
            rfc3339(latest)
        ))
    };
    // In i128 ms, so that no input overflows before it is compared.
    let ms: i128 = if let Some(after) = t.strip_prefix('+') {
        let d =
            parse_duration(after).map_err(|e| StartAtError(format!("--start-at {t:?}: {e}")))?;
        i128::from(now_ms) + d.as_millis() as i128
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<i128>().map_err(|_| out_of_range())?
    } else {
        let when = OffsetDateTime::parse(t, &Rfc3339)
            .map_err(|_| StartAtError(format!("--start-at {t:?} is not a time; {hint}")))?;
        when.unix_timestamp_nanos() / 1_000_000
    };
    if ms < i128::from(earliest) || ms > i128::from(latest) {
        return Err(out_of_range());
    }
    Ok(ms as u64)
}

/// `unix_ms` as RFC 3339 in UTC, to the second.
pub fn rfc3339(unix_ms: u64) -> String {
    OffsetDateTime::from_unix_timestamp((unix_ms / 1000) as i64)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{unix_ms} ms"))
}

/// What a user is told about the start: when it waits (a future `--start-at`), the line
/// that says until when; when the time has passed already, a warning (the shard starts at
/// once, late).
pub enum StartNote {
    Waiting(String),
    Late(String),
}

/// The note for `spec`'s start at `now` (Unix ms), if it has a `--start-at`.
pub fn start_note(spec: &RunSpec, now: u64) -> Option<StartNote> {
    let at = spec.start_at_unix_ms?;
    if at > now {
        let left_s = (at - now).div_ceil(1000);
        return Some(StartNote::Waiting(format!(
            "webtune: waiting until {} (in {}) to start; Ctrl-C stops",
            rfc3339(at),
            span(left_s)
        )));
    }
    (now - at > 1000).then(|| {
        StartNote::Late(format!(
            "--start-at was {:.1}s ago: starting now; this shard's start will be skewed",
            (now - at) as f64 / 1000.0
        ))
    })
}

/// "2d 3h 4m 5s", "45s".
fn span(seconds: u64) -> String {
    let parts = [
        (seconds / 86_400, "d"),
        (seconds / 3600 % 24, "h"),
        (seconds / 60 % 60, "m"),
        (seconds % 60, "s"),
    ];
    let shown: Vec<String> = parts
        .iter()
        .skip_while(|(n, _)| *n == 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    if shown.is_empty() {
        "0s".into()
    } else {
        shown.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_parse_in_all_three_forms() {
        let now = 1_796_000_000_000; // 33 h before 2026-12-01T10:00:00Z
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

    #[test]
    fn absurd_start_times_are_refused_with_the_range() {
        let now = 1_796_119_200_000; // 2026-12-01T10:00:00Z
        for bad in [
            "18446744073709551615",
            "99999999999999999999999999",
            "9999-12-31T23:59:59Z",
            "0001-01-01T00:00:00Z",
            "0",
            "+720h",
            "2026-12-09T10:00:01Z",
            "2026-11-30T09:59:59Z",
        ] {
            let e = parse_start_at(bad, now).expect_err(bad).to_string();
            assert_eq!(
                e,
                format!(
                    "--start-at {bad:?} is out of range: give a time from 1 day ago to 7 days \
                     ahead (2026-11-30T10:00:00Z … 2026-12-08T10:00:00Z)"
                ),
            );
        }
        assert!(parse_start_at("2026-12-08T10:00:00Z", now).is_ok());
        assert!(parse_start_at("+168h", now).is_ok());
        assert_eq!(span(2 * 86_400 + 3 * 3600 + 5), "2d 3h 0m 5s");
        assert_eq!(span(45), "45s");
    }
}
