//! Think time: the pause per connection between a response and the next request, parsed
//! from a scenario's `think` and sampled per request.

use crate::rng::Rng;
use std::time::Duration;

/// The longest think time accepted; longer is almost surely a unit mistake.
const MAX_THINK: Duration = Duration::from_secs(3600);

/// Think time: how long a connection waits after a response before its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    None,
    Fixed(Duration),
    /// Uniform between the two bounds, inclusive of the lower.
    Uniform(Duration, Duration),
    /// Exponential with this mean (a Poisson user).
    Exponential(Duration),
}

impl Think {
    /// One think time.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo).mul_f64(rng.unit()),
            Think::Exponential(mean) => {
                Duration::try_from_secs_f64(rng.exp(mean.as_secs_f64())).unwrap_or(MAX_THINK)
            }
        }
    }

    /// The mean think time.
    pub fn mean(&self) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo) / 2,
        }
    }

    /// Parse "0", "none", "100ms", "uniform:50ms:150ms" or "exp:100ms".
    pub fn parse(text: &str) -> Result<Think, String> {
        const FORMS: &str = "use e.g. \"100ms\", \"uniform:50ms:150ms\" or \"exp:100ms\"";
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let think = if lower == "none" || lower.is_empty() {
            Think::None
        } else if let Some(rest) = lower.strip_prefix("uniform:") {
            let (lo, hi) = rest
                .split_once(':')
                .ok_or_else(|| format!("think {text:?} needs two bounds; {FORMS}"))?;
            let lo = parse_duration(lo).map_err(|e| format!("think {text:?}: {e}"))?;
            let hi = parse_duration(hi).map_err(|e| format!("think {text:?}: {e}"))?;
            if lo > hi {
                return Err(format!(
                    "think {text:?} has its lower bound above its upper; swap them"
                ));
            }
            Think::Uniform(lo, hi)
        } else if let Some(rest) = lower.strip_prefix("exp:") {
            Think::Exponential(parse_duration(rest).map_err(|e| format!("think {text:?}: {e}"))?)
        } else if lower.contains(':') {
            return Err(format!("think {text:?} is not a known form; {FORMS}"));
        } else {
            Think::Fixed(
                parse_duration(&lower).map_err(|e| format!("think {text:?}: {e}; {FORMS}"))?,
            )
        };
        if think.mean() > MAX_THINK {
            return Err(format!(
                "think {text:?} is longer than an hour; check the unit ({FORMS})"
            ));
        }
        Ok(match think {
            Think::Fixed(d) | Think::Exponential(d) if d.is_zero() => Think::None,
            Think::Uniform(lo, hi) if hi.is_zero() && lo.is_zero() => Think::None,
            other => other,
        })
    }
}

/// A think time: the workspace's one duration grammar (`webtune_model::parse_duration`),
/// except that a bare number other than "0" is refused here: in a scenario file "5" is more
/// likely meant as milliseconds than as seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text != "0" && !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("{text:?} has no unit; write e.g. {text}ms"));
    }
    webtune_model::parse_duration(text).map_err(|e| e.to_string())
}
