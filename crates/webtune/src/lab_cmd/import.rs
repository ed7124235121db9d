//! `lab run --nginx-config FILE` / `--apache-config FILE` / `--php-fpm-config FILE`: the
//! user's config tree is read
//! with the readers the advisor uses too (crates/conf) and handed to the lab's import
//! (crates/lab/src/import), which runs it on a private copy like any lab stack.

use super::RunArgs;
use crate::flags::bench::BenchArgs;
use anyhow::bail;
use std::path::Path;
use webtune_engine::Workload;
use webtune_lab::import::{ConfigTree, Import, Server};
use webtune_lab::trial::Target;

/// The target and path of `lab run` with a config of the user's, or None without one.
pub(super) fn target(
    args: &RunArgs,
    bench: &BenchArgs,
    workload: &Workload,
) -> anyhow::Result<Option<(Target, String)>> {
    let (server, file) = match (
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    ) {
        (Some(file), _, _) => (Server::Nginx, file),
        (None, Some(file), _) => (Server::Apache, file),
        (None, None, Some(file)) => (Server::PhpFpm, file),
        (None, None, None) => return Ok(None),
    };
    let flag = match server {
        Server::Nginx => "--nginx-config",
        Server::Apache => "--apache-config",
        Server::PhpFpm => "--php-fpm-config",
        Server::MariaDb => "--mysql-config",
    };
    if let Some(stack) = &args.stack {
        bail!("give a stack ({stack}) or {flag}, not both");
    }
    if args.url.is_some() || !args.processes.is_empty() || !args.pids.is_empty() {
        bail!("{flag} runs a private copy the lab starts: no URL, no --process and no --pid");
    }
    if args.addresses > 1 {
        bail!("--addresses does not apply to {flag}: the private copy listens on 127.0.0.1 only");
    }
    let import = import(server, file, &args.set)?;
    let default_path = super::default_path(super::Served::Imported(&import), workload);
    let path = super::load_path(bench.url.as_deref(), default_path)?;
    Ok(Some((
        Target::Imported {
            import: Box::new(import),
        },
        path,
    )))
}

/// Read a config tree and check the `--set NAME=VALUE` overrides against it.
pub(crate) fn import(server: Server, file: &Path, set: &[String]) -> anyhow::Result<Import> {
    let tree = read_tree(server, file)?;
    let pairs: Vec<(String, String)> = set
        .iter()
        .map(|a| webtune_lab::parse_assignment(a))
        .collect::<Result<_, _>>()?;
    Ok(Import::new(tree, &pairs)?)
}

/// The tree as the readers see it (a syntax error names its file and line).
pub(crate) fn read_tree(server: Server, file: &Path) -> anyhow::Result<ConfigTree> {
    Ok(ConfigTree::read(server, file)?)
}
