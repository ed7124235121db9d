//! What only the libraries know, given to the grammar by its caller: the lab's stack and
//! parameter names (completion candidates), how a CPU list is checked (it needs the host's
//! online CPUs), and `--version`'s build features (the engine's). The grammar declares these
//! arguments as text; `command` puts the caller's parsers on them, so `--help`, errors and
//! completions read as if the grammar had them itself, while this crate depends on nothing
//! that runs. Without a vocabulary (`Cli::command()`) they take any text.

use crate::candidates::{any_text, Candidates};
use clap::{Arg, Command, CommandFactory};

/// The values and checks the caller supplies.
pub struct Vocabulary {
    /// `--version`'s text: the short version, then one `name: value` line per feature.
    pub long_version: &'static str,
    /// Candidates of every STACK argument (`lab run`, `lab params`, `tune`, …).
    pub stacks: Vec<String>,
    /// Candidates of every `--set NAME=VALUE`, as `NAME=`.
    pub parameters: Vec<String>,
    /// Checks `--server-cpus` / `--client-cpus`, giving the list back as written.
    pub cpu_list: fn(&str) -> Result<String, String>,
}

/// The arguments that take a stack name, and `--set`'s, by clap id; the grammar marks those
/// that offer the candidates with `hide_possible_values` (the lists are long).
const STACK: &str = "stack";
const SET: &str = "set";
const CPU_LISTS: [&str; 2] = ["server_cpus", "client_cpus"];

/// `Cli::command()` with the vocabulary's parsers and version in place.
pub fn command(vocabulary: &Vocabulary) -> Command {
    let cmd = crate::Cli::command().long_version(vocabulary.long_version);
    fill(cmd, vocabulary)
}

/// `cmd` and its subcommands, each vocabulary argument given its parser (in place: the
/// arguments keep their order, which numbers the positional ones).
fn fill(cmd: Command, v: &Vocabulary) -> Command {
    let mut cmd = cmd.mut_args(|a: Arg| {
        let offers = a.is_hide_possible_values_set();
        match a.get_id().as_str() {
            STACK if offers => a.value_parser(Candidates::new(v.stacks.clone(), any_text)),
            SET if offers => a.value_parser(Candidates::new(v.parameters.clone(), any_text)),
            id if CPU_LISTS.contains(&id) => a.value_parser(v.cpu_list),
            _ => a,
        }
    });
    for sub in cmd.get_subcommands_mut() {
        let taken = std::mem::replace(sub, Command::new("-"));
        *sub = fill(taken, v);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Vocabulary {
        Vocabulary {
            long_version: "0.1.0 (commit test)\nio: epoll",
            stacks: vec!["nginx".into()],
            parameters: vec!["worker_processes=".into()],
            cpu_list: |t| match t {
                "0" => Ok(t.to_string()),
                _ => Err(format!("bad CPU list {t:?}")),
            },
        }
    }

    fn sub<'a>(cmd: &'a Command, path: &[&str]) -> &'a Command {
        path.iter()
            .fold(cmd, |c, name| c.find_subcommand(name).unwrap())
    }

    #[test]
    fn candidates_go_where_the_grammar_offers_them_and_the_order_stays() {
        let ours = command(&vocabulary());
        let plain = crate::Cli::command();
        for path in [
            &["lab", "run"][..],
            &["tune"],
            &["lab", "compare"],
            &["lab", "sweep"],
        ] {
            let ids = |c: &Command| -> Vec<String> {
                sub(c, path)
                    .get_arguments()
                    .map(|a| a.get_id().to_string())
                    .collect()
            };
            assert_eq!(ids(&ours), ids(&plain), "{path:?}");
        }
        let values = |path: &[&str], id: &str| -> Vec<String> {
            sub(&ours, path)
                .get_arguments()
                .find(|a| a.get_id() == id)
                .unwrap()
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect()
        };
        assert_eq!(values(&["lab", "run"], "stack"), ["nginx"]);
        assert_eq!(values(&["tune"], "set"), ["worker_processes="]);
        // `lab compare`'s stack offers none (it did not before the grammar moved).
        assert!(values(&["lab", "compare"], "stack").is_empty());
    }

    #[test]
    fn a_cpu_list_is_checked_and_the_version_is_the_callers() {
        fn words(list: &str) -> [&str; 6] {
            ["webtune", "lab", "run", "nginx", "--server-cpus", list]
        }
        let cmd = command(&vocabulary());
        assert!(cmd.clone().try_get_matches_from(words("0")).is_ok());
        let e = cmd.clone().try_get_matches_from(words("zz")).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(e.to_string().contains("bad CPU list \"zz\""), "{e}");
        // Without a vocabulary any text parses (the grammar alone runs nothing).
        assert!(crate::Cli::command()
            .try_get_matches_from(words("zz"))
            .is_ok());
        let long = cmd.render_long_version();
        assert!(long.ends_with("io: epoll\n"), "{long}");
    }
}
