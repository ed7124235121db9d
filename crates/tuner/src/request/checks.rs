//! The rules a tune request must follow before anything runs, whoever asks (the `tune`
//! command, a resume, a test): the objective and its SLOs (`--maximize capacity` is an
//! objective of its own with its SLOs as the capacity search's), the smallest budget, what
//! `external` needs and refuses, the forum's PHP, a parameter fixed and searched at once,
//! and what the proof's pair count can show. Each refusal is one line naming the flag.

use crate::job::CapacityObjective;
use webtune_lab::StackKind;
use webtune_search::objective::{Objective, Slo};
use webtune_search::space::Space;

/// The search's smallest budget: the default is measured twice first (the noise floor).
pub const MIN_TRIALS: usize = 3;

/// Why a tune request is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error("{0}")]
    Objective(#[from] webtune_search::objective::ObjectiveError),
    #[error("--trials must be at least {MIN_TRIALS} (the default is measured twice first)")]
    TooFewTrials,
    #[error("--maximize capacity needs --slo: capacity is the highest rate that holds them")]
    CapacityWithoutSlo,
    #[error("--maximize capacity searches the rate itself: no --levels")]
    CapacityWithLevels,
    #[error("{0}")]
    CapacitySlo(String),
    #[error("--app forum needs a stack with PHP; {0} has none")]
    ForumWithoutPhp(String),
    #[error("{0} is both --set and --param: a parameter is fixed or searched, not both")]
    FixedAndSearched(String),
    #[error("tune external needs --apply CMD: webtune cannot change your server itself")]
    ExternalWithoutApply,
    #[error("tune external needs --param: webtune does not know your server's parameters")]
    ExternalWithoutParams,
    #[error("--apply-timeout must be more than 0, e.g. --apply-timeout 2m")]
    ZeroApplyTimeout,
    #[error(
        "--apply, --restore and --baseline are for tune external; lab stacks are configured by webtune"
    )]
    HooksOnLabStack,
}

/// What is optimised and under which constraints: the objective, the SLOs each trial is
/// judged by, and for `--maximize capacity` the capacity search (whose SLOs they are then;
/// a trial's figure is the capacity itself).
pub struct Goal {
    pub objective: Objective,
    pub slos: Vec<Slo>,
    pub capacity: Option<CapacityObjective>,
}

/// `--maximize WHAT` / `--minimize STAT` with `--slo`s and whether `--levels` were given.
pub fn goal(
    maximize: Option<&str>,
    minimize: Option<&str>,
    slos: &[String],
    levels_given: bool,
) -> Result<Goal, RuleError> {
    let objective = match (maximize, minimize) {
        (_, Some(stat)) => Objective::minimize(stat)?,
        (Some(what), None) => Objective::maximize(what)?,
        (None, None) => Objective::MaximizeThroughput,
    };
    if objective == Objective::MaximizeCapacity {
        if slos.is_empty() {
            return Err(RuleError::CapacityWithoutSlo);
        }
        if levels_given {
            return Err(RuleError::CapacityWithLevels);
        }
        let slos = webtune_search::capacity::parse_slos(slos)
            .map_err(|e| RuleError::CapacitySlo(e.to_string()))?;
        return Ok(Goal {
            objective,
            slos: Vec::new(),
            capacity: Some(CapacityObjective {
                slos,
                search: webtune_model::capacity::SearchSettings::default(),
            }),
        });
    }
    Ok(Goal {
        objective,
        slos: slos
            .iter()
            .map(|s| Slo::parse(s))
            .collect::<Result<_, _>>()?,
        capacity: None,
    })
}

/// The budget of the search.
pub fn check_trials(trials: usize) -> Result<(), RuleError> {
    if trials < MIN_TRIALS {
        return Err(RuleError::TooFewTrials);
    }
    Ok(())
}

/// The forum runs PHP.
pub fn check_forum(stack: StackKind) -> Result<(), RuleError> {
    if !stack.has_php() {
        return Err(RuleError::ForumWithoutPhp(stack.name().to_string()));
    }
    Ok(())
}

/// `tune external`: an --apply command, parameters, and a timeout above zero.
pub fn check_external(
    apply: Option<&str>,
    params_given: bool,
    timeout: std::time::Duration,
) -> Result<(), RuleError> {
    if apply.is_none() {
        return Err(RuleError::ExternalWithoutApply);
    }
    if !params_given {
        return Err(RuleError::ExternalWithoutParams);
    }
    if timeout.is_zero() {
        return Err(RuleError::ZeroApplyTimeout);
    }
    Ok(())
}

/// A lab stack is configured by webtune: no hooks and no baseline.
pub fn check_lab_stack(hooks_or_baseline_given: bool) -> Result<(), RuleError> {
    if hooks_or_baseline_given {
        return Err(RuleError::HooksOnLabStack);
    }
    Ok(())
}

/// A parameter is fixed (`--set`) or searched (`--param`), not both.
pub fn check_fixed(fixed: &[(String, String)], space: &Space) -> Result<(), RuleError> {
    match fixed
        .iter()
        .find(|(name, _)| space.params.iter().any(|p| p.name == *name))
    {
        Some((name, _)) => Err(RuleError::FixedAndSearched(name.clone())),
        None => Ok(()),
    }
}

/// What `pairs` proof pairs can show, said before the run when it is little: one pair
/// gives no interval, so no verdict but "no significant difference"; with two or three the
/// 95% interval reaches 9.0 or 2.5 times the pairs' spread either side of the mean
/// (Student's t with 1 or 2 degrees of freedom), so only a gain far above the run-to-run
/// noise can come out significant. None from four pairs on, and for no proof at all.
pub fn proof_power(pairs: usize) -> Option<String> {
    match pairs {
        0 => None,
        1 => Some(
            "--confirm 1: one pair gives no interval, so the proof can never find a significant \
             difference; use --confirm 5 (the default) or more"
                .to_string(),
        ),
        2 | 3 => {
            let reach = if pairs == 2 { "9.0" } else { "2.5" };
            Some(format!(
                "--confirm {pairs}: with {pairs} pairs the 95% interval reaches {reach}× the pairs' \
                 spread either side of the mean, so only a gain far above the noise can come out \
                 significant; use --confirm 5 (the default) or more"
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_its_own_objective_with_the_slos_of_its_search() {
        let g = goal(Some("capacity"), None, &["p99<=100ms".into()], false).unwrap();
        assert_eq!(g.objective, Objective::MaximizeCapacity);
        assert!(g.slos.is_empty());
        assert_eq!(g.capacity.unwrap().slos.len(), 1);
        assert_eq!(
            goal(Some("capacity"), None, &[], false).err(),
            Some(RuleError::CapacityWithoutSlo)
        );
        assert_eq!(
            goal(Some("capacity"), None, &["p99<=1s".into()], true).err(),
            Some(RuleError::CapacityWithLevels)
        );
        let g = goal(None, Some("p99"), &["errors<=1%".into()], true).unwrap();
        assert_eq!(g.objective.to_string(), "minimize p99");
        assert_eq!(g.slos.len(), 1);
        assert_eq!(
            goal(None, None, &[], false).unwrap().objective,
            Objective::MaximizeThroughput
        );
    }

    #[test]
    fn the_rules_refuse_in_one_line() {
        assert!(check_trials(2).is_err() && check_trials(3).is_ok());
        assert_eq!(
            check_forum(StackKind::Nginx).unwrap_err().to_string(),
            "--app forum needs a stack with PHP; nginx has none"
        );
        let space = Space::parse(
            &["workers=1..8".to_string()],
            &crate::driver::external_catalogue(&["workers=1..8".to_string()], &[]),
        )
        .unwrap();
        assert_eq!(
            check_fixed(&[("workers".into(), "2".into())], &space)
                .unwrap_err()
                .to_string(),
            "workers is both --set and --param: a parameter is fixed or searched, not both"
        );
        assert!(check_fixed(&[("other".into(), "2".into())], &space).is_ok());
    }

    #[test]
    fn a_proof_too_small_to_show_anything_is_said() {
        assert!(proof_power(0).is_none());
        assert!(proof_power(1).unwrap().contains("can never"));
        assert!(proof_power(2).unwrap().contains("9.0×"));
        assert!(proof_power(3).is_some());
        assert!(proof_power(5).is_none());
    }
}
