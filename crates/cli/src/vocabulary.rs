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
