//! The command line as the binary parses it: the grammar (`webtune_cli::Cli`) with what only
//! the libraries know filled in (`webtune_cli::vocabulary`): the lab's stack and parameter
//! names as completion candidates, the host's CPUs for `--server-cpus`/`--client-cpus`, and
//! the engine's build features for `--version`. `main`, `completions` and `man` all read it.

use webtune_cli::vocabulary::{self, Vocabulary};
use webtune_lab::host::CpuSet;

/// The whole command line: parsed by `main`, written out by `completions` and `man`.
pub fn command() -> clap::Command {
    vocabulary::command(&Vocabulary {
        long_version: crate::version::long(),
        stacks: stacks(),
        parameters: parameters(),
        cpu_list,
    })
}

/// The lab's stack names (`webtune lab stacks`), fs's and the forum database's included.
fn stacks() -> Vec<String> {
    let mut names: Vec<String> = webtune_lab::StackKind::all()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    names.push(webtune_lab::filesystem::NAME.to_string());
    names.push("mariadb".to_string());
    names.sort();
    names.dedup();
    names
}

/// `--set NAME=VALUE`: every stack's parameter names (and the database's `db.*`) as `NAME=`.
fn parameters() -> Vec<String> {
    let mut names: Vec<String> = webtune_lab::StackKind::all()
        .iter()
        .flat_map(|s| s.parameters())
        .chain(webtune_lab::forum::dbparams::parameters())
        .map(|p| format!("{}=", p.name))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A CPU list this host has, given back as written (`lab_cmd` reads it into a `CpuSet`).
fn cpu_list(text: &str) -> Result<String, String> {
    cpu_set(text).map(|_| text.to_string())
}

/// `--server-cpus`/`--client-cpus` as the lab takes them.
pub fn cpu_set(text: &str) -> Result<CpuSet, String> {
    CpuSet::parse(text, webtune_lab::host::online_cpus()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_names_stacks_and_parameters() {
        let names = stacks();
        assert!(names.contains(&"nginx".to_string()), "{names:?}");
        assert!(names.contains(&"apache-prefork".to_string()), "{names:?}");
        let params = parameters();
        assert!(
            params.contains(&"worker_processes=".to_string()),
            "{params:?}"
        );
        assert!(params.contains(&"db.max_connections=".to_string()));
    }
}
