//! Reading `[[journey]]` tables: the journey's own keys (`name`, `weight`, `users`,
//! `unique_users`), its steps (`[[journey.step]]`: a request's keys plus `extract`, `think`,
//! `repeat`, `once`) and groups (a step with `[[journey.step.step]]` of its own), each
//! problem one line naming the file, the journey and the step.

use super::csv_file::{load_csv, CsvCache};
use super::error::{one_line, problem, Problem, ScenarioError};
use super::journey::{Block, Extract, Journey, Pattern, Repeat, Step};
use super::request::{check_request_in, key_with_wrong_type, RawRequest};
use super::template::Scope;
use super::think::Think;
use std::path::Path;

/// The most a step or group may repeat in one walk (more is surely a typo).
const MAX_REPEAT: u32 = 100_000;

/// A journey's step table split into its request and its journey keys.
struct RawStep {
    label: String,
    extract: Vec<(String, String)>,
    think: Option<Think>,
    repeat: Repeat,
    once: Option<bool>,
    kind: StepKind,
}

enum StepKind {
    Request(toml::Table),
    Group(Vec<RawStep>),
}

/// Parse every `[[journey]]`. Step names are unique within a journey; two journeys may
/// share one (both log in with a step "login"): their per-name rows add up, as JMeter's
/// report adds up samplers of one label.
pub(super) fn parse_journeys(
    items: Vec<toml::Value>,
    base_dir: &Path,
    origin: &str,
    cache: &mut CsvCache,
) -> Result<Vec<Journey>, ScenarioError> {
    let mut journeys: Vec<Journey> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let toml::Value::Table(table) = item else {
            return Err(invalid(
                origin,
                format!("journey #{}: is not a table", index + 1),
                "start each journey with [[journey]] (two brackets)",
            ));
        };
        let label = table
            .get("name")
            .and_then(toml::Value::as_str)
            .map(|n| format!("journey {n:?}"))
            .unwrap_or_else(|| format!("journey #{}", index + 1));
        let journey =
            parse_journey(table, base_dir, cache, &mut Vec::new()).map_err(|(at, p)| {
                let at = at.map(|s| format!(" step {s:?}")).unwrap_or_default();
                invalid(origin, format!("{label}{at}: {}", p.problem), &p.fix)
            })?;
        if journeys.iter().any(|j| j.name == journey.name) {
            return Err(invalid(
                origin,
                format!("{label}: the name is used twice"),
                "give every journey its own name (results are broken down by journey)",
            ));
        }
        journeys.push(journey);
    }
    if journeys.iter().all(|j| j.weight == 0) {
        return Err(invalid(
            origin,
            "every journey has weight 0".into(),
            "give at least one journey a weight above 0",
        ));
    }
    Ok(journeys)
}

fn invalid(origin: &str, problem: String, fix: &str) -> ScenarioError {
    ScenarioError::Invalid {
        file: origin.to_string(),
        request: None,
        problem,
        fix: fix.to_string(),
    }
}

type StepProblem = (Option<String>, Problem);

fn whole(p: Problem) -> StepProblem {
    (None, p)
}

fn parse_journey(
    mut table: toml::Table,
    base_dir: &Path,
    cache: &mut CsvCache,
    names: &mut Vec<String>,
) -> Result<Journey, StepProblem> {
    let name = match table.remove("name") {
        Some(toml::Value::String(n)) => n,
        Some(_) => return Err(whole(problem("name must be a string", "quote it"))),
        None => {
            return Err(whole(problem(
                "has no name",
                "add name = \"readers\" (results are broken down by journey)",
            )))
        }
    };
    check_name(&name).map_err(whole)?;
    let weight = match table.remove("weight") {
        None => 1,
        Some(toml::Value::Integer(w)) if u32::try_from(w).is_ok() => w as u32,
        Some(_) => {
            return Err(whole(problem(
                "weight must be a whole number ≥ 0",
                "write e.g. weight = 90",
            )))
        }
    };
    let users = match table.remove("users") {
        None => None,
        Some(toml::Value::String(file)) => {
            Some(load_csv(&base_dir.join(&file), cache).map_err(whole)?)
        }
        Some(_) => {
            return Err(whole(problem(
                "users must be a file name",
                "write e.g. users = \"users.csv\" (relative to the scenario file)",
            )))
        }
    };
    let unique_users = match table.remove("unique_users") {
        None => false,
        Some(toml::Value::Boolean(b)) => b,
        Some(_) => {
            return Err(whole(problem(
                "unique_users must be true or false",
                "write unique_users = true",
            )))
        }
    };
    if unique_users && users.is_none() {
        return Err(whole(problem(
            "unique_users without a users file",
            "add users = \"users.csv\", or remove unique_users",
        )));
    }
    let raw_steps = match table.remove("step") {
        Some(toml::Value::Array(items)) => read_steps(items, true)?,
        Some(_) => {
            return Err(whole(problem(
                "step is not a list of tables",
                "write each step as a [[journey.step]] table",
            )))
        }
        None => Vec::new(),
    };
    if let Some(key) = table.keys().next() {
        return Err(whole(problem(
            format!("unknown key {key:?}"),
            "a journey takes name, weight, users, unique_users and [[journey.step]] tables",
        )));
    }
    if raw_steps.is_empty() {
        return Err(whole(problem(
            "has no steps",
            "add at least one [[journey.step]] table with a name and a path",
        )));
    }
    // Every value any step extracts, in walking order: a `{var:...}` is its index here.
    let mut all_vars: Vec<String> = Vec::new();
    collect_vars(&raw_steps, &mut all_vars);
    let mut journey = Journey {
        name,
        weight,
        users,
        unique_users,
        steps: Vec::new(),
        blocks: Vec::new(),
        vars: Vec::new(),
    };
    let mut seen_plain = false;
    for raw in raw_steps {
        let label = raw.label.clone();
        let at = |p: Problem| (Some(label.clone()), p);
        let once = raw.once.unwrap_or(false);
        if once && seen_plain {
            return Err(at(problem(
                "once = true after a step without it",
                "put the once steps (the login) first: they run only at a user's start",
            )));
        }
        seen_plain |= !once;
        let block = journey.blocks.len();
        let start = journey.steps.len();
        let repeat = raw.repeat;
        match raw.kind {
            StepKind::Request(_) => add_step(
                &mut journey,
                raw,
                once,
                block,
                &all_vars,
                base_dir,
                cache,
                names,
            )?,
            StepKind::Group(children) => {
                if !raw.extract.is_empty() || raw.think.is_some() {
                    return Err(at(problem(
                        "a group takes only name, repeat, once and its steps",
                        "put extract and think on the group's steps",
                    )));
                }
                for child in children {
                    let child_label = child.label.clone();
                    if child.once.is_some() {
                        return Err((
                            Some(child_label),
                            problem("once inside a group", "put once = true on the group itself"),
                        ));
                    }
                    if child.repeat != Repeat::Times(1) {
                        return Err((
                            Some(child_label),
                            problem(
                                "repeat inside a group",
                                "groups do not nest: repeat the group, or make this step its own",
                            ),
                        ));
                    }
                    add_step(
                        &mut journey,
                        child,
                        once,
                        block,
                        &all_vars,
                        base_dir,
                        cache,
                        names,
                    )?;
                }
            }
        }
        journey.blocks.push(Block {
            start,
            end: journey.steps.len(),
            repeat,
        });
    }
    if journey.steps.iter().all(|s| s.once) {
        return Err(whole(problem(
            "every step has once = true: after its start a user would have nothing to walk",
            "leave once off the steps a user repeats (the reading after the login)",
        )));
    }
    journey.vars = all_vars;
    Ok(journey)
}

/// The values extracted by these steps (and their groups' steps), first use first.
fn collect_vars(steps: &[RawStep], out: &mut Vec<String>) {
    for s in steps {
        match &s.kind {
            StepKind::Group(children) => collect_vars(children, out),
            StepKind::Request(_) => {
                for (var, _) in &s.extract {
                    if !out.contains(var) {
                        out.push(var.clone());
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn add_step(
    journey: &mut Journey,
    raw: RawStep,
    once: bool,
    block: usize,
    all_vars: &[String],
    base_dir: &Path,
    cache: &mut CsvCache,
    names: &mut Vec<String>,
) -> Result<(), StepProblem> {
    let label = raw.label;
    let at = |p: Problem| (Some(label.clone()), p);
    let StepKind::Request(table) = raw.kind else {
        return Err(at(problem(
            "a group inside a group",
            "groups do not nest; list the steps in the outer group",
        )));
    };
    // The values earlier steps extract are known here (a prefix of `all_vars`).
    let known = all_vars
        .iter()
        .position(|v| {
            !journey
                .steps
                .iter()
                .any(|s| s.extract.iter().any(|e| all_vars[e.var] == *v))
        })
        .unwrap_or(all_vars.len());
    let scope = Scope {
        known: &all_vars[..known],
        later: all_vars,
        users: journey.users.as_ref(),
    };
    let bad_key = key_with_wrong_type(&table).map(|k| format!("{k}: "));
    let request: RawRequest =
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                at(problem(
                    format!("{}{}", bad_key.unwrap_or_default(), one_line(e.message())),
                    "fix the key or its type (every key is listed in docs/scenarios.md)",
                ))
            })?;
    let request = check_request_in(request, base_dir, cache, Some(&scope)).map_err(&at)?;
    if names.contains(&request.name) {
        return Err(at(problem(
            "the name is used twice in the journey",
            "give every step of a journey its own name (results are broken down by name)",
        )));
    }
    names.push(request.name.clone());
    let mut extract = Vec::with_capacity(raw.extract.len());
    for (var, text) in raw.extract {
        let pattern = parse_pattern(&var, &text).map_err(&at)?;
        let var = all_vars.iter().position(|v| *v == var).expect("collected");
        extract.push(Extract { var, pattern });
    }
    journey.steps.push(Step {
        request,
        extract,
        think: raw.think,
        once,
        block,
    });
    Ok(())
}

fn parse_pattern(var: &str, text: &str) -> Result<Pattern, Problem> {
    if let Some(pointer) = text.strip_prefix("json:") {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(problem(
                format!("extract {var}: JSON pointer {pointer:?} does not start with '/'"),
                "write e.g. \"json:/data/id\" (RFC 6901)",
            ));
        }
        return Ok(Pattern::Json(pointer.to_string()));
    }
    if text.is_empty() {
        return Err(problem(
            format!("extract {var}: the pattern is empty"),
            "write a regular expression whose first group is the value, e.g. 'name=\"csrf\" value=\"([^\"]+)\"'",
        ));
    }
    regex::bytes::RegexBuilder::new(text)
        .size_limit(1 << 20)
        .build()
        .map(Pattern::Regex)
        .map_err(|e| {
            problem(
                format!(
                    "extract {var}: the pattern {text:?} does not compile ({})",
                    one_line(&e.to_string())
                ),
                "fix the regular expression (Rust regex syntax; no look-around)",
            )
        })
}

fn check_name(name: &str) -> Result<(), Problem> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
    {
        return Err(problem(
            "the name must be 1-64 letters, digits, '_', '-' or '.'",
            "rename it, e.g. name = \"posters\"",
        ));
    }
    Ok(())
}

fn read_steps(items: Vec<toml::Value>, top: bool) -> Result<Vec<RawStep>, StepProblem> {
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let toml::Value::Table(mut t) = item else {
            return Err(whole(problem(
                format!("step #{} is not a table", index + 1),
                "write each step as a [[journey.step]] table",
            )));
        };
        let label = t
            .get("name")
            .and_then(toml::Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("#{}", index + 1));
        let at = |p: Problem| (Some(label.clone()), p);
        let extract =
            match t.remove("extract") {
                None => Vec::new(),
                Some(toml::Value::Table(map)) => {
                    let mut list = Vec::with_capacity(map.len());
                    for (var, v) in map {
                        let ok_name = !var.is_empty()
                            && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                        if !ok_name {
                            return Err(at(problem(
                                format!("extract: {var:?} is not a variable name"),
                                "use letters, digits and '_', e.g. csrf",
                            )));
                        }
                        match v {
                            toml::Value::String(p) => list.push((var, p)),
                            _ => {
                                return Err(at(problem(
                                    format!("extract {var}: the pattern must be a string"),
                                    "write extract = { csrf = 'name=\"csrf\" value=\"([^\"]+)\"' }",
                                )))
                            }
                        }
                    }
                    list
                }
                Some(_) => return Err(at(problem(
                    "extract must be a table of NAME = 'pattern'",
                    "write extract = { csrf = 'value=\"([^\"]+)\"' } or { id = \"json:/data/id\" }",
                ))),
            };
        let think = match t.remove("think") {
            None => None,
            Some(toml::Value::String(s)) => Some(Think::parse(&s).map_err(|e| at(problem(e, "")))?),
            Some(toml::Value::Integer(0)) => Some(Think::None),
            Some(_) => {
                return Err(at(problem(
                    "think must be a string",
                    "write e.g. think = \"uniform:1s:3s\"",
                )))
            }
        };
        let repeat = match t.remove("repeat") {
            None => Repeat::Times(1),
            Some(v) => parse_repeat(&v).map_err(&at)?,
        };
        let once = match t.remove("once") {
            None => None,
            Some(toml::Value::Boolean(b)) => Some(b),
            Some(_) => {
                return Err(at(problem(
                    "once must be true or false",
                    "write once = true",
                )))
            }
        };
        let kind = match t.remove("step") {
            Some(toml::Value::Array(children)) if top => {
                if let Some(key) = t.keys().find(|k| *k != "name") {
                    return Err(at(problem(
                        format!("a group (a step with steps) takes no {key:?}"),
                        "put the request keys on the group's [[journey.step.step]] tables",
                    )));
                }
                let children = read_steps(children, false)?;
                if children.is_empty() {
                    return Err(at(problem(
                        "the group has no steps",
                        "add [[journey.step.step]] tables",
                    )));
                }
                StepKind::Group(children)
            }
            Some(_) if !top => {
                return Err(at(problem(
                    "a group inside a group",
                    "groups do not nest; list the steps in the outer group",
                )))
            }
            Some(_) => {
                return Err(at(problem(
                    "step is not a list of tables",
                    "write each step of a group as a [[journey.step.step]] table",
                )))
            }
            None => StepKind::Request(t),
        };
        out.push(RawStep {
            label,
            extract,
            think,
            repeat,
            once,
            kind,
        });
    }
    Ok(out)
}

fn parse_repeat(v: &toml::Value) -> Result<Repeat, Problem> {
    const FORMS: &str = "write repeat = 3 or repeat = \"rand:1:5\"";
    let bound = |n: i64| {
        u32::try_from(n)
            .ok()
            .filter(|&n| n <= MAX_REPEAT)
            .ok_or_else(|| {
                problem(
                    format!("repeat {n} is not between 0 and {MAX_REPEAT}"),
                    FORMS,
                )
            })
    };
    match v {
        toml::Value::Integer(n) => Ok(Repeat::Times(bound(*n)?)),
        toml::Value::String(s) => {
            let (lo, hi) = s
                .strip_prefix("rand:")
                .and_then(|r| r.split_once(':'))
                .ok_or_else(|| problem(format!("repeat {s:?} is not a known form"), FORMS))?;
            let num = |t: &str| {
                t.trim()
                    .parse::<i64>()
                    .map_err(|_| {
                        problem(format!("repeat {s:?}: {t:?} is not a whole number"), FORMS)
                    })
                    .and_then(bound)
            };
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi {
                return Err(problem(
                    format!("repeat {s:?} has LO above HI"),
                    format!("write \"rand:{hi}:{lo}\""),
                ));
            }
            Ok(Repeat::Rand(lo, hi))
        }
        _ => Err(problem("repeat must be a number or a string", FORMS)),
    }
}
