//! One plan per knob. Rules do not write sizing directives themselves: they state
//! constraints on them (≥, ≤, =, "a multiple of ThreadsPerChild", a preferred value), each
//! with its reason and source. The reconciler turns every knob's constraints into one
//! recommended value, or a conflict that is stated and never written into a patch. The
//! plan's values are what the patch writes and what the rules that depend on another
//! knob (ServerLimit on MaxRequestWorkers, max_connections on pm.max_children) read.

use crate::change::{key_name, Bound, Change, Constraint};
use serde::Serialize;

/// One directive's plan: the value chosen and every bound on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Planned {
    pub server: String,
    pub directive: String,
    pub current: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The recommended value; None when the bounds conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    /// Why no value can satisfy every bound (then nothing is written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
    pub bounds: Vec<Constraint>,
    /// The line the patch writes (none when the value is the current one, or in conflict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// Why the change was not written (the server's check of the patched copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

impl Planned {
    /// "MaxRequestWorkers 25" in the server's own syntax.
    pub fn text(&self, value: i64) -> String {
        directive_text(&self.server, &self.directive, value, &self.unit)
    }

    /// The id its change is written under: "plan: " and the findings that bound it.
    pub fn id(&self) -> String {
        format!("plan: {}", self.findings().join(", "))
    }

    /// The findings that bound it (not the server's own bounds).
    pub fn findings(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for b in self.bounds.iter().filter(|b| !b.structural) {
            if !ids.contains(&b.finding.as_str()) {
                ids.push(&b.finding);
            }
        }
        ids
    }
}

/// A directive line in the server's syntax.
pub fn directive_text(server: &str, name: &str, value: i64, unit: &str) -> String {
    match server {
        "apache2" => format!("{name} {value}{unit}"),
        "nginx" => format!("{name} {value}{unit};"),
        _ => format!("{name} = {value}{unit}"),
    }
}

/// The plan: one entry per constrained directive, in the order first constrained.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    pub knobs: Vec<Planned>,
}

impl Plan {
    /// Reconcile every directive's constraints into one value.
    pub fn reconcile(constraints: &[Constraint]) -> Plan {
        let mut keys = Vec::new();
        for c in constraints.iter().filter(|c| !c.structural) {
            if !keys.contains(&c.key()) {
                keys.push(c.key());
            }
        }
        let knobs = keys
            .iter()
            .map(|k| {
                let bounds: Vec<Constraint> = constraints
                    .iter()
                    .filter(|c| &c.key() == k)
                    .cloned()
                    .collect();
                plan_one(bounds)
            })
            .collect();
        Plan { knobs }
    }

    /// The plan of a directive, by server and name (any spelling).
    pub fn get(&self, server: &str, directive: &str) -> Option<&Planned> {
        let key = key_name(directive);
        self.knobs
            .iter()
            .find(|p| p.server == server && key_name(&p.directive) == key)
    }

    /// The plan of the directive a constraint bounds.
    pub fn knob_of(&self, c: &Constraint) -> Option<&Planned> {
        self.knobs
            .iter()
            .find(|p| p.bounds.iter().any(|b| b.key() == c.key()))
    }

    /// The planned value of a directive, else `current`.
    pub fn value_or(&self, server: &str, directive: &str, current: i64) -> i64 {
        self.get(server, directive)
            .and_then(|p| p.value)
            .unwrap_or(current)
    }

    pub fn conflicts(&self) -> impl Iterator<Item = &Planned> {
        self.knobs.iter().filter(|p| p.conflict.is_some())
    }
}

fn plan_one(bounds: Vec<Constraint>) -> Planned {
    let first = bounds.iter().find(|c| !c.structural).unwrap_or(&bounds[0]);
    let (server, directive, current, unit) = (
        first.server.clone(),
        first.directive.clone(),
        first.current,
        first.unit.clone(),
    );
    let place = first.place.clone();
    let mut lo = i64::MIN;
    let mut hi = i64::MAX;
    let mut exact: Option<i64> = None;
    let mut step = 1i64;
    let mut prefer: Option<i64> = None;
    let mut conflict: Option<String> = None;
    let says = |c: &Constraint| {
        let who = if c.structural { &c.reason } else { &c.finding };
        format!("{} [{who}]", c.bound.describe())
    };
    for c in &bounds {
        match c.bound {
            Bound::AtLeast(v) => lo = lo.max(v),
            Bound::AtMost(v) => hi = hi.min(v),
            Bound::Exactly(v) => match exact {
                Some(e) if e != v => {
                    conflict.get_or_insert(format!("{directive} = {e} and = {v} both asked"));
                }
                _ => exact = Some(v),
            },
            Bound::MultipleOf(v) if v > 1 => step = lcm(step, v),
            Bound::MultipleOf(_) => {}
            // Several preferences: the smallest, the cautious one (a larger value is
            // bounded from below by whoever needs it).
            Bound::Prefer(v) => prefer = Some(prefer.map_or(v, |p: i64| p.min(v))),
        }
    }
    if let Some(e) = exact {
        lo = lo.max(e);
        hi = hi.min(e);
    }
    let mut value = None;
    if conflict.is_none() {
        if lo > hi {
            let low = bounds
                .iter()
                .filter(|c| matches!(c.bound, Bound::AtLeast(v) | Bound::Exactly(v) if v == lo))
                .map(says)
                .collect::<Vec<_>>()
                .join(", ");
            let high = bounds
                .iter()
                .filter(|c| matches!(c.bound, Bound::AtMost(v) | Bound::Exactly(v) if v == hi))
                .map(says)
                .collect::<Vec<_>>()
                .join(", ");
            conflict = Some(format!(
                "{directive} must be ≥ {lo} ({low}) and ≤ {hi} ({high}): no value satisfies both"
            ));
        } else {
            // The preference, else the current value, kept within the bounds.
            let want = exact.or(prefer).unwrap_or(current).clamp(lo, hi);
            let down = want.div_euclid(step) * step;
            let up = down + if down == want { 0 } else { step };
            let pick = [down, up].into_iter().find(|v| *v >= lo && *v <= hi);
            match pick {
                Some(v) => value = Some(v),
                None => {
                    conflict = Some(format!(
                        "{directive}: no multiple of {step} lies within ≥ {lo} and ≤ {hi}"
                    ))
                }
            }
        }
    }
    let change = value.filter(|v| *v != current).map(|v| Change {
        text: directive_text(&server, &directive, v, &unit),
        ..place
    });
    Planned {
        server,
        directive,
        current,
        unit,
        value,
        conflict,
        bounds,
        change,
        patch: None,
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: i64, b: i64) -> i64 {
    (a / gcd(a, b).max(1)).saturating_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn c(bound: Bound, finding: &str) -> Constraint {
        let mut c = Constraint::on(
            "apache2",
            "MaxRequestWorkers",
            150,
            None,
            Path::new("/a.conf"),
            None,
        )
        .bound(bound, "r", "s");
        c.finding = finding.into();
        c
    }

    #[test]
    fn bounds_are_reconciled_into_one_value() {
        // 2 busy per core wants 4, ThreadsPerChild 25 needs ≥ 25 and a multiple of 25,
        // the memory budget allows 61.
        let p = Plan::reconcile(&[
            c(Bound::Prefer(4), "proxy"),
            c(Bound::AtLeast(25), "mpm"),
            c(Bound::MultipleOf(25), "mpm"),
            c(Bound::AtMost(61), "memory"),
        ]);
        assert_eq!(p.knobs.len(), 1);
        assert_eq!(p.knobs[0].value, Some(25));
        assert_eq!(
            p.knobs[0].change.as_ref().unwrap().text,
            "MaxRequestWorkers 25"
        );
        // No preference: the current value (150) clamped to ≤ 61, rounded down to 50.
        let p = Plan::reconcile(&[
            c(Bound::MultipleOf(25), "mpm"),
            c(Bound::AtMost(61), "memory"),
        ]);
        assert_eq!(p.knobs[0].value, Some(50));
    }

    #[test]
    fn a_conflict_is_stated_and_written_nowhere() {
        let p = Plan::reconcile(&[c(Bound::AtLeast(400), "a"), c(Bound::AtMost(61), "b")]);
        let k = &p.knobs[0];
        assert_eq!(k.value, None);
        assert!(k.change.is_none());
        let why = k.conflict.as_deref().unwrap();
        assert!(
            why.contains("≥ 400 (≥ 400 [a])") && why.contains("≤ 61 (≤ 61 [b])"),
            "{why}"
        );
        let p = Plan::reconcile(&[
            c(Bound::AtLeast(30), "a"),
            c(Bound::AtMost(40), "b"),
            c(Bound::MultipleOf(25), "c"),
        ]);
        assert!(p.knobs[0].conflict.is_some());
    }
}
