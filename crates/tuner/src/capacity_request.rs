//! `capacity URL` and `lab capacity STACK` as a request: the SLOs every step must meet, the
//! search's settings, the open loop's connection cap and arrivals, each step's length
//! (10 s unless given: `model::spec::DEFAULT_DURATION_S`) and the rest between steps. It
//! checks them before any load and shapes a caller's trial (its target and request) into
//! the `CapacitySpec` that `capacity_run` searches.

use crate::capacity_run::CapacitySpec;
use anyhow::bail;
use std::time::Duration;
use webtune_lab::trial::{Level, Trial};
use webtune_model::capacity::SearchSettings;
use webtune_model::{Arrival, LoadMode, StopCondition, Threshold};
use webtune_search::capacity::{check, parse_slos};

/// A capacity search's settings.
#[derive(Debug, Clone)]
pub struct CapacityRequest {
    /// In the --threshold grammar: 'p99<=100ms', 'errors<=0.1%'.
    pub slos: Vec<String>,
    pub search: SearchSettings,
    /// The most connections opened to keep each step's schedule.
    pub connections: u32,
    pub arrival: Arrival,
    /// Each step's length (None: 10 s).
    pub step: Option<Duration>,
    /// Rest between steps.
    pub pause: Duration,
}

impl CapacityRequest {
    /// The SLOs, parsed, and the search's settings checked: before any load.
    pub fn check(&self) -> anyhow::Result<Vec<Threshold>> {
        let slos = parse_slos(&self.slos)?;
        check(&self.search)?;
        Ok(slos)
    }

    /// The search of `trial`'s target with its load at the request's connection cap,
    /// arrivals and step length, starting at the first rate; `tool` names the generator.
    pub fn spec(&self, trial: Trial, tool: &str) -> anyhow::Result<CapacitySpec> {
        let slos = self.check()?;
        if self.connections == 0 {
            bail!("-c must be at least 1");
        }
        let step = self.step.unwrap_or(Duration::from_secs_f64(
            webtune_model::spec::DEFAULT_DURATION_S,
        ));
        let mut trial = trial;
        trial.load.connections = self.connections;
        trial.load.load = LoadMode::Open {
            rate: self.search.start_rps,
            arrival: self.arrival,
        };
        trial.load.stop = StopCondition::Duration {
            seconds: step.as_secs_f64(),
        };
        trial.load.validate()?;
        trial.levels = vec![Level::Rate(self.search.start_rps)];
        trial.pause = self.pause;
        Ok(CapacitySpec {
            trial,
            slos,
            search: self.search,
            tool: tool.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_lab::trial::Target;
    use webtune_model::RunSpec;

    fn request(slos: &[&str]) -> CapacityRequest {
        CapacityRequest {
            slos: slos.iter().map(|s| s.to_string()).collect(),
            search: SearchSettings::default(),
            connections: 50,
            arrival: Arrival::Poisson,
            step: None,
            pause: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_search_starts_open_loop_at_its_first_rate_in_ten_second_steps() {
        let trial = Trial::new(Target::external("http://127.0.0.1:1"), RunSpec::default());
        let spec = request(&["p99<=100ms"])
            .spec(trial, "webtune test")
            .unwrap();
        assert_eq!(spec.slos.len(), 1);
        assert_eq!(spec.trial.load.connections, 50);
        assert_eq!(
            spec.trial.load.load,
            LoadMode::Open {
                rate: 100.0,
                arrival: Arrival::Poisson
            }
        );
        assert_eq!(
            spec.trial.load.stop,
            StopCondition::Duration { seconds: 10.0 }
        );
        assert_eq!(spec.trial.levels, [Level::Rate(100.0)]);
        assert_eq!(spec.trial.pause, Duration::from_secs(1));
    }

    #[test]
    fn no_slo_and_no_connection_are_refused_before_any_load() {
        assert!(request(&[]).check().is_err());
        let trial = Trial::new(Target::external("http://127.0.0.1:1"), RunSpec::default());
        let none = CapacityRequest {
            connections: 0,
            ..request(&["p99<=1s"])
        };
        let e = none.spec(trial, "t").err().unwrap().to_string();
        assert!(e.contains("-c must be at least 1"), "{e}");
    }
}
