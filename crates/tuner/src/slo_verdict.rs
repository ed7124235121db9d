//! The proof's verdict where the SLOs speak: a winner that met every SLO in its proof runs
//! beats a default that broke one, whatever the objective says, and the reverse; when both
//! broke one, the objective's verdict stands but says so (neither configuration is
//! acceptable as measured). Pure: runs meeting the SLOs in, words out.

/// The proof's verdict when the two arms differ on the SLOs, or both broke one (runs meeting
/// every SLO out of runs measured, for the default and the winner): the SLOs decide before
/// the objective. `objective` is the objective's own (outcome, verdict).
pub fn slo_verdict(
    have_slos: bool,
    (default_ok, default_runs): (usize, usize),
    (winner_ok, winner_runs): (usize, usize),
    (objective_outcome, objective_verdict): (&str, &str),
) -> Option<(String, String)> {
    if !have_slos || default_runs == 0 || winner_runs == 0 {
        return None;
    }
    if winner_ok == winner_runs && default_ok < default_runs {
        return Some((
            "better".into(),
            format!(
                "better: the winner met every SLO in {winner_ok}/{winner_runs} runs, the default in \
                 {default_ok}/{default_runs}: keep the winner (objective alone: {objective_verdict})"
            ),
        ));
    }
    if default_ok == default_runs && winner_ok < winner_runs {
        return Some((
            "worse".into(),
            format!(
                "worse: the winner broke an SLO in {}/{winner_runs} runs, the default in none: keep \
                 the default",
                winner_runs - winner_ok
            ),
        ));
    }
    if default_ok < default_runs && winner_ok < winner_runs {
        return Some((
            objective_outcome.into(),
            format!(
                "{objective_verdict}; but both broke an SLO (the default in {}/{default_runs} \
                 runs, the winner in {}/{winner_runs}): neither meets the SLOs here",
                default_runs - default_ok,
                winner_runs - winner_ok
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slos_decide_the_proof_before_the_objective() {
        let (outcome, verdict) = slo_verdict(
            true,
            (0, 3),
            (3, 3),
            ("no difference", "no significant difference"),
        )
        .expect("the winner meets the SLOs, the default does not");
        assert_eq!(outcome, "better");
        assert!(
            verdict.contains("3/3") && verdict.contains("keep the winner"),
            "{verdict}"
        );
        let (outcome, _) = slo_verdict(true, (3, 3), (1, 3), ("better", "better by 5%")).unwrap();
        assert_eq!(outcome, "worse");
        assert!(
            slo_verdict(true, (3, 3), (3, 3), ("x", "x")).is_none(),
            "both meet them"
        );
        assert!(
            slo_verdict(false, (0, 3), (3, 3), ("x", "x")).is_none(),
            "no SLOs"
        );
    }

    #[test]
    fn a_proof_where_both_broke_an_slo_says_so() {
        let (outcome, verdict) = slo_verdict(
            true,
            (0, 3),
            (2, 3),
            (
                "no difference",
                "no significant difference: keep the default",
            ),
        )
        .expect("both broke an SLO");
        assert_eq!(outcome, "no difference", "the objective's outcome stands");
        assert!(
            verdict.starts_with("no significant difference: keep the default; but both broke")
                && verdict.contains("the default in 3/3 runs, the winner in 1/3")
                && verdict.contains("neither meets the SLOs"),
            "{verdict}"
        );
    }
}
