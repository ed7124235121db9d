//! Parsing the units people type: durations ("500ms", "2s", "1m30s", "1h", "1.5s") and
//! status lists ("2xx,3xx,200-299,404"). The one grammar for each, used by every command,
//! the scenario files and the lab; whether zero is allowed is the caller's check.

use std::time::Duration;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration (write e.g. 500ms, 2s, 1m30s, 1h)")]
    NotADuration(String),
    #[error("unknown unit {unit:?} in {text:?} (use us, ms, s, m or h)")]
    UnknownUnit { text: String, unit: String },
    #[error("{0:?} repeats a unit or has them out of order (write e.g. 1h2m, 1m30s)")]
    UnitOrder(String),
    #[error("{0:?} is too long")]
    TooLong(String),
}

/// The longest duration accepted (about 31 years): anything longer is a typo.
const MAX_SECONDS: f64 = 1e9;

/// Seconds per unit, with a rank so that compound durations go from large to small units.
fn unit_seconds(unit: &str) -> Option<(f64, u8)> {
    Some(match unit {
        "h" => (3600.0, 5),
        "m" | "min" => (60.0, 4),
        "s" | "sec" => (1.0, 3),
        "ms" => (1e-3, 2),
        "us" | "µs" => (1e-6, 1),
        _ => return None,
    })
}

/// Parse a duration: a number and a unit ("500ms", "2s", "1.5s", "2m", "1h", "250us"),
/// several of them from large to small units ("1m30s", "1h2m3s"), or a bare number of
/// seconds ("1.5", "0"). Negative numbers, exponents and spaces inside are refused.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let not_a_duration = || DurationError::NotADuration(text.to_string());
    let is_number = |c: char| c.is_ascii_digit() || c == '.';
    if t.is_empty() {
        return Err(not_a_duration());
    }
    // A bare number is seconds.
    if t.chars().all(is_number) {
        return seconds_to_duration(parse_number(t).ok_or_else(not_a_duration)?, text);
    }
    let mut rest = t;
    let mut seconds = 0.0;
    let mut last_rank = u8::MAX;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !is_number(c)).unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let value = parse_number(number).ok_or_else(not_a_duration)?;
        let unit_end = after.find(is_number).unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let (per_unit, rank) = unit_seconds(unit).ok_or_else(|| {
            if !unit.is_empty() && unit.chars().all(char::is_alphabetic) {
                DurationError::UnknownUnit {
                    text: text.to_string(),
                    unit: unit.to_string(),
                }
            } else {
                not_a_duration()
            }
        })?;
        if rank >= last_rank {
            return Err(DurationError::UnitOrder(text.to_string()));
        }
        last_rank = rank;
        seconds += value * per_unit;
        rest = next;
    }
    seconds_to_duration(seconds, text)
}

/// A plain decimal number ≥ 0: digits with at most one '.', at least one digit.
fn parse_number(text: &str) -> Option<f64> {
    if !text.bytes().any(|b| b.is_ascii_digit()) || text.matches('.').count() > 1 {
        return None;
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn seconds_to_duration(seconds: f64, text: &str) -> Result<Duration, DurationError> {
    if !seconds.is_finite() || seconds > MAX_SECONDS {
        return Err(DurationError::TooLong(text.to_string()));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| DurationError::TooLong(text.to_string()))
}

/// Why a status list did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    #[error("bad status {0:?} (write e.g. 200, 2xx or 200-299)")]
    BadStatus(String),
    #[error("bad status class {0:?} (use 1xx … 5xx)")]
    BadClass(String),
    #[error("status range {0:?} must lie within 100-999, low end first")]
    OutOfRange(String),
    #[error("the status list is empty (write e.g. 2xx,3xx)")]
    Empty,
}

/// Inclusive status ranges, e.g. from "2xx,3xx,200-299,404": the statuses counted as
/// success. Stored in `RunSpec::expect_status` as `(low, high)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRanges(pub Vec<(u16, u16)>);

impl StatusRanges {
    /// Parse entries separated by commas: a code ("404"), a class ("2xx") or a range
    /// ("200-299"). Spaces around entries are ignored; an empty list is refused.
    pub fn parse(text: &str) -> Result<StatusRanges, StatusError> {
        Self::parse_all(std::iter::once(text))
    }

    /// Parse several lists (each as in [`StatusRanges::parse`]) into one.
    pub fn parse_all<'a>(
        lists: impl IntoIterator<Item = &'a str>,
    ) -> Result<StatusRanges, StatusError> {
        let mut out = Vec::new();
        for part in lists
            .into_iter()
            .flat_map(|l| l.split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            out.push(parse_status_entry(part)?);
        }
        if out.is_empty() {
            return Err(StatusError::Empty);
        }
        Ok(StatusRanges(out))
    }

    /// Is `status` in one of the ranges?
    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    pub fn into_pairs(self) -> Vec<(u16, u16)> {
        self.0
    }
}

impl std::str::FromStr for StatusRanges {
    type Err = StatusError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StatusRanges::parse(s)
    }
}

fn parse_status_entry(part: &str) -> Result<(u16, u16), StatusError> {
    let lower = part.to_ascii_lowercase();
    let bad = || StatusError::BadStatus(part.to_string());
    let code = |s: &str| -> Result<u16, StatusError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse()
            .map_err(|_| StatusError::OutOfRange(part.to_string()))
    };
    let range = if let Some(class) = lower.strip_suffix("xx") {
        let c: u16 = class
            .parse()
            .ok()
            .filter(|c| (1..=5).contains(c))
            .ok_or_else(|| StatusError::BadClass(part.to_string()))?;
        (c * 100, c * 100 + 99)
    } else if let Some((a, b)) = lower.split_once('-') {
        (code(a)?, code(b)?)
    } else {
        let s = code(&lower)?;
        (s, s)
    };
    if range.0 < 100 || range.1 > 999 || range.0 > range.1 {
        return Err(StatusError::OutOfRange(part.to_string()));
    }
    Ok(range)
}

/// A share written as a percentage above 0 and below 100 (`5%`, `2.5`), as a fraction:
/// capacity's `--precision`, compare's `--same-within`.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v < 100.0)
        .map(|v| v / 100.0)
        .ok_or_else(|| format!("{text:?} is not a percentage above 0 and below 100, e.g. 5%"))
}

/// A size of RAM as `--ram` takes it: a number with K, M, G or T (1024-based; `GiB`, `GB`
/// and `g` alike), fractions allowed (`1.5G`). None for anything else, a bare number
/// included (its unit would be a guess).
pub fn parse_ram(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "k" | "kb" | "kib" => 0,
        "m" | "mb" | "mib" => 10,
        "g" | "gb" | "gib" => 20,
        "t" | "tb" | "tib" => 30,
        _ => return None,
    };
    let n: f64 = num.parse().ok()?;
    let kib = n * (1u64 << shift) as f64;
    (kib.is_finite() && kib >= 1.0 && kib < (1u64 << 50) as f64).then_some(kib as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_reads_as_a_fraction() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("10"), Ok(0.1));
        assert!(parse_percent("0%").is_err());
        assert!(parse_percent("x").is_err());
    }

    fn d(text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn parses_common_forms() {
        assert_eq!(d("10s"), Duration::from_secs(10));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("2min"), Duration::from_secs(120));
        assert_eq!(d("1h"), Duration::from_secs(3600));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("250us"), Duration::from_micros(250));
        assert_eq!(d("250µs"), Duration::from_micros(250));
        assert_eq!(d(" 3sec "), Duration::from_secs(3));
    }

    #[test]
    fn bare_numbers_are_seconds() {
        assert_eq!(d("1.5"), Duration::from_millis(1500));
        assert_eq!(d("7"), Duration::from_secs(7));
        assert_eq!(d("0"), Duration::ZERO);
        assert_eq!(d("0s"), Duration::ZERO);
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d("1h2m3s"), Duration::from_secs(3723));
        assert_eq!(d("1s500ms"), Duration::from_millis(1500));
        assert_eq!(
            parse_duration("30s1m"),
            Err(DurationError::UnitOrder("30s1m".into()))
        );
        assert_eq!(
            parse_duration("1s1s"),
            Err(DurationError::UnitOrder("1s1s".into()))
        );
    }

    #[test]
    fn refuses_nonsense_with_a_reason() {
        for bad in ["", "s", "ten", "-1s", "1e3s", "ms5", "1..5s", "5 s", "1m30"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} parsed");
        }
        assert!(matches!(
            parse_duration("5x"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(parse_duration("ten")
            .unwrap_err()
            .to_string()
            .contains("not a duration"));
        assert!(matches!(
            parse_duration("99999999999h"),
            Err(DurationError::TooLong(_))
        ));
    }

    #[test]
    fn status_lists() {
        let p = |t: &str| StatusRanges::parse(t).map(StatusRanges::into_pairs);
        assert_eq!(p("2xx,3xx").unwrap(), vec![(200, 299), (300, 399)]);
        assert_eq!(
            p("2xx,3xx,200-299,404").unwrap(),
            vec![(200, 299), (300, 399), (200, 299), (404, 404)]
        );
        assert_eq!(p(" 200-204 , 404").unwrap(), vec![(200, 204), (404, 404)]);
        assert_eq!(p("2XX").unwrap(), vec![(200, 299)]);
        assert_eq!(p("9xx"), Err(StatusError::BadClass("9xx".into())));
        assert_eq!(p("abc"), Err(StatusError::BadStatus("abc".into())));
        assert_eq!(p("299-200"), Err(StatusError::OutOfRange("299-200".into())));
        assert_eq!(p("99"), Err(StatusError::OutOfRange("99".into())));
        assert_eq!(p("70000"), Err(StatusError::OutOfRange("70000".into())));
        assert_eq!(p("+200"), Err(StatusError::BadStatus("+200".into())));
        assert_eq!(p(""), Err(StatusError::Empty));
        assert_eq!(p(" , "), Err(StatusError::Empty));
        let all = StatusRanges::parse_all(["2xx", "304"]).unwrap();
        assert!(all.contains(204) && all.contains(304) && !all.contains(301));
    }
}
