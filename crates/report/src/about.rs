//! What a lab page says it is about (issue 39): the stack, its settings that differ from the
//! defaults, and the load — one line under the title of a run's page (`html`) and of a
//! sweep's (`sweep`).

use webtune_model::RunResult;

/// A lab run's page says what it is about (issue 39): the stack, its settings that differ
/// from the defaults (those set with `--set`, as the server got them), and the load. None
/// for a run without a lab stack.
pub fn stack_line(result: &RunResult) -> Option<String> {
    let stack = stack_settings(result)?;
    Some(format!(
        "Stack: {stack}. Load: {}.",
        load_words(&result.spec, true)
    ))
}

/// A sweep's page header: the stack and its settings, and each level's load.
pub fn sweep_stack_line(first: &RunResult, levels: &str) -> Option<String> {
    let stack = stack_settings(first)?;
    Some(format!(
        "Stack: {stack}. Load: each level ({levels}) {}.",
        load_words(&first.spec, false)
    ))
}

/// "nginx with the defaults but use=poll": a lab run's stack and what differs from its
/// defaults; None for a run without a lab stack.
pub fn stack_settings(result: &RunResult) -> Option<String> {
    let server = result.server.as_ref()?;
    if server.target.is_empty() || server.target == "external" {
        return None;
    }
    let settings = if server.parameters_set.is_empty() {
        "its defaults".to_string()
    } else {
        let set: Vec<String> = server
            .parameters_set
            .iter()
            .map(|name| match server.parameters.get(name) {
                Some(value) => format!("{name}={value}"),
                None => name.clone(),
            })
            .collect();
        format!("the defaults but {}", set.join(", "))
    };
    Some(format!("{} with {settings}", server.target))
}

/// "20 connections, for 10 s (the first 2 s left out of the figures)", without the
/// connections when `with_connections` is false (a sweep's levels give them).
fn load_words(spec: &webtune_model::RunSpec, with_connections: bool) -> String {
    let length = match spec.run_length_s() {
        Some(s) => format!("for {s} s"),
        None => match spec.stop {
            webtune_model::StopCondition::Requests { count } => format!("{count} requests"),
            _ => String::new(),
        },
    };
    let mut window = Vec::new();
    if spec.warmup_s > 0.0 {
        window.push(format!("the first {} s", spec.warmup_s));
    }
    if spec.cooldown_s > 0.0 {
        window.push(format!("the last {} s", spec.cooldown_s));
    }
    let left_out = if window.is_empty() {
        String::new()
    } else {
        format!(" ({} left out of the figures)", window.join(" and "))
    };
    if with_connections {
        format!("{} connections, {length}{left_out}", spec.connections)
    } else {
        format!("{length}{left_out}")
    }
}
