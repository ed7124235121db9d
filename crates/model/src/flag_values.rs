//! What the load flags' values mean in a spec, engine-free, for every front end that takes
//! them (bench, sweep, smtp, capacity, the flags after a lab command's `--`): ramp stages
//! ("10s:50,30s:200"), a header line, the loop (`--rate`, `--arrival`), the stop (`-n` or
//! `-d`, `DEFAULT_DURATION_S` when neither) and the connections when `-c` is not given.

use crate::{parse_duration, Arrival, LoadMode, Stage, StopCondition};
use std::time::Duration;

/// A flag value that means nothing, in one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(pub String);

fn refuse<T>(message: impl Into<String>) -> Result<T, FlagError> {
    Err(FlagError(message.into()))
}

/// Parse "10s:50,30s:200,10s:0" into ramp stages.
pub fn parse_stages(text: &str) -> Result<Vec<Stage>, FlagError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((dur, target)) = part.split_once(':') else {
            return refuse(format!(
                "stage {part:?} is not DURATION:TARGET (e.g. 10s:50)"
            ));
        };
        let seconds = parse_duration(dur)
            .map_err(|e| FlagError(format!("stage {part:?}: {e}")))?
            .as_secs_f64();
        let Some(target) = target
            .trim()
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
        else {
            return refuse(format!("stage {part:?}: the target must be a number ≥ 0"));
        };
        out.push(Stage { seconds, target });
    }
    if out.is_empty() {
        return refuse("--stages is empty (e.g. 10s:50,30s:200,10s:0)");
    }
    Ok(out)
}

/// "Name: value" (-H) as a trimmed pair.
pub fn parse_header(text: &str) -> Result<(String, String), FlagError> {
    let Some((name, value)) = text.split_once(':') else {
        return refuse(format!("header {text:?} has no ':' (use -H 'Name: value')"));
    };
    Ok((name.trim().to_string(), value.trim().to_string()))
}

/// Open-loop pacing from `--rate` and `--arrival`.
pub fn load_mode(rate: Option<f64>, arrival: &str) -> LoadMode {
    match rate {
        None => LoadMode::Closed,
        Some(rate) => LoadMode::Open {
            rate,
            arrival: if arrival == "poisson" {
                Arrival::Poisson
            } else {
                Arrival::Uniform
            },
        },
    }
}

/// `-n` or `-d` (10 s when neither is given).
pub fn stop_condition(requests: Option<u64>, duration: Option<Duration>) -> StopCondition {
    match (requests, duration) {
        (Some(count), _) => StopCondition::Requests { count },
        (None, Some(d)) => StopCondition::Duration {
            seconds: d.as_secs_f64(),
        },
        (None, None) => StopCondition::Duration {
            seconds: crate::spec::DEFAULT_DURATION_S,
        },
    }
}

/// `-c` when given; else a closed-loop ramp's highest target (it needs that many), the open
/// loop's cap (`OPEN_LOOP_CONNECTIONS`), or `DEFAULT_CONNECTIONS`.
pub fn connections_for(given: Option<u32>, stages: &[Stage], rate: Option<f64>) -> u32 {
    match (given, stages.is_empty(), rate) {
        (Some(c), _, _) => c,
        (None, false, None) => stages
            .iter()
            .map(|s| s.target.ceil() as u32)
            .max()
            .unwrap_or(1)
            .max(1),
        (None, _, Some(_)) => crate::spec::OPEN_LOOP_CONNECTIONS,
        (None, _, None) => crate::spec::DEFAULT_CONNECTIONS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_and_refuse_nonsense() {
        let st = parse_stages("10s:50, 30s:200,10s:0").unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(st[1].seconds, 30.0);
        assert_eq!(st[1].target, 200.0);
        assert!(parse_stages("10s").is_err());
        assert!(parse_stages("10s:-1").is_err());
        assert!(parse_stages("").is_err());
    }

    #[test]
    fn headers_need_a_colon() {
        assert_eq!(
            parse_header("X-A:  b c").unwrap(),
            ("X-A".to_string(), "b c".to_string())
        );
        assert!(parse_header("nocolon").is_err());
    }

    #[test]
    fn connections_follow_the_loop_when_not_given() {
        let ramp = parse_stages("5s:10,5s:40.5").unwrap();
        assert_eq!(connections_for(Some(3), &ramp, None), 3);
        assert_eq!(connections_for(None, &ramp, None), 41);
        assert_eq!(connections_for(None, &[], Some(5.0)), 1000);
        assert_eq!(connections_for(None, &[], None), 10);
        assert_eq!(
            stop_condition(None, None),
            StopCondition::Duration { seconds: 10.0 }
        );
        assert_eq!(load_mode(None, "poisson"), LoadMode::Closed);
    }
}
