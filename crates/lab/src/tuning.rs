//! What is worth tuning on each stack: the default search space (the parameters that
//! matter, with ranges a search can cover in tens of trials, and why each is there), the
//! rule-of-thumb configurations from the seeds, and `complete`, which adds the dependent
//! limits a tuned value needs so that the servers accept the configuration (Apache refuses
//! or silently lowers MaxRequestWorkers above ServerLimit, for example).
//!
//! Each server's part (its space, its rule, its dependent limits) is its own, in
//! `servers`; this module puts a stack's together. It knows servers, not search: the tuner
//! (`crates/search`) gets the space as data.

use crate::stacks::Component;
use crate::StackKind;

pub use crate::vocab::{Completion, Tunable, TuneRange};

/// The default search space of a stack (with `forum`: and its database's `db.*`), for a
/// host with `cores` CPUs. Empty for `external`.
pub fn default_space(stack: StackKind, forum: bool, cores: u32) -> Vec<Tunable> {
    let cores = i64::from(cores.max(1));
    let proxy = stack.components().len() > 1;
    let mut space = Vec::new();
    for (prefix, component) in stack.components() {
        space.extend(component.server().tuning_space(prefix, cores, proxy));
    }
    if forum {
        space.extend(Component::MariaDb.server().tuning_space(
            crate::forum::dbparams::PREFIX,
            cores,
            proxy,
        ));
    }
    space
}

/// The rule-of-thumb configurations worth measuring first, named by their rule: seed 000's
/// "about two busy backend processes per core behind a proxy". (Seed 001's "free RAM / per-
/// process PSS" needs the default's measured PSS: the tuner derives it after the first
/// trial.)
pub fn rules_of_thumb(stack: StackKind, cores: u32) -> Vec<(String, Vec<(String, String)>)> {
    let two_per_core = (cores.max(1) * 2).to_string();
    let proxy = stack.components().len() > 1;
    let mut rules = Vec::new();
    for (prefix, component) in stack.components() {
        if let Some(name) = component.server().busy_processes_parameter(proxy) {
            rules.push((
                "seed 000: two busy backend processes per core behind a proxy".to_string(),
                vec![(format!("{prefix}{name}"), two_per_core.clone())],
            ));
        }
    }
    rules
}

/// Add to `assignments` the dependent limits its values need, for every one the caller did
/// not set itself: Apache's ServerLimit at least MaxRequestWorkers (prefork) or
/// MaxRequestWorkers / ThreadsPerChild (worker, event), ThreadLimit at least
/// ThreadsPerChild, MaxRequestWorkers a multiple of ThreadsPerChild; php-fpm's spare and
/// start servers within max_children.
pub fn complete(stack: StackKind, assignments: &[(String, String)]) -> Vec<(String, String)> {
    let mut completion = Completion::new(assignments, stack.parameters());
    for (prefix, component) in stack.components() {
        component.server().complete(prefix, &mut completion);
    }
    completion.into_assignments()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::settings_for;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn words(list: &[(String, String)]) -> Vec<String> {
        list.iter().map(|(n, v)| format!("{n}={v}")).collect()
    }

    /// Every default space names real parameters with ranges inside their real ranges: the
    /// lab accepts both ends of every range.
    #[test]
    fn default_spaces_are_accepted_at_both_ends() {
        for &stack in StackKind::all() {
            for forum in [false, stack.has_php()] {
                let space = default_space(stack, forum, 2);
                if stack == StackKind::External {
                    assert!(space.is_empty());
                    continue;
                }
                assert!(!space.is_empty(), "{}", stack.name());
                for end in [0, 1] {
                    let assignments: Vec<(String, String)> = space
                        .iter()
                        .map(|t| {
                            let value = match &t.range {
                                TuneRange::Int { lo, hi, .. } => {
                                    if end == 0 { *lo } else { *hi }.to_string()
                                }
                                TuneRange::Choice(c) => c[end.min(c.len() - 1)].clone(),
                            };
                            (t.name.clone(), value)
                        })
                        .collect();
                    let (web, db): (Vec<_>, Vec<_>) = assignments
                        .into_iter()
                        .partition(|(n, _)| !n.starts_with("db."));
                    let completed = complete(stack, &web);
                    settings_for(stack, &words(&completed))
                        .unwrap_or_else(|e| panic!("{} {:?}: {e}", stack.name(), completed));
                    crate::forum::dbparams::settings_for(&words(&db))
                        .unwrap_or_else(|e| panic!("{db:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn complete_raises_the_limits_a_value_needs_and_keeps_what_was_set() {
        let stack = StackKind::from_name("apache-prefork").unwrap();
        let out = complete(stack, &pairs(&[("MaxRequestWorkers", "400")]));
        assert!(
            out.contains(&("ServerLimit".into(), "400".into())),
            "{out:?}"
        );
        let kept = complete(
            stack,
            &pairs(&[("MaxRequestWorkers", "400"), ("ServerLimit", "500")]),
        );
        assert!(kept.contains(&("ServerLimit".into(), "500".into())));
        let event = StackKind::from_name("apache-event").unwrap();
        let out = complete(
            event,
            &pairs(&[("ServerLimit", "3"), ("ThreadsPerChild", "40")]),
        );
        assert!(
            out.contains(&("MaxRequestWorkers".into(), "120".into())),
            "{out:?}"
        );
        assert!(
            out.contains(&("ThreadLimit".into(), "64".into())),
            "{out:?}"
        );
        settings_for(event, &words(&out)).unwrap();
    }

    #[test]
    fn rules_of_thumb_are_two_backend_processes_per_core_behind_a_proxy() {
        let rules = rules_of_thumb(StackKind::from_name("nginx-apache").unwrap(), 2);
        assert_eq!(rules[0].1, pairs(&[("backend.MaxRequestWorkers", "4")]));
        let php = rules_of_thumb(StackKind::from_name("nginx-php-fpm").unwrap(), 2);
        assert_eq!(php[0].1, pairs(&[("pm.max_children", "4")]));
        assert!(rules_of_thumb(StackKind::from_name("nginx").unwrap(), 2).is_empty());
    }
}
