//! `lab run --nginx-config FILE` / `--apache-config FILE` / `--php-fpm-config FILE`: the
//! user's config tree is read
//! with the advisor's readers (crates/advise) and handed to the lab's import
//! (crates/lab/src/import.rs), which runs it on a private copy like any lab stack.

use super::RunArgs;
use crate::bench_cmd::BenchArgs;
use anyhow::bail;
use std::collections::BTreeMap;
use std::path::Path;
use webtune_advise::config::Parsed;
use webtune_engine::Workload;
use webtune_lab::import::{ConfigTree, Import, Located, Server};
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
    if args.url.is_some() || !args.processes.is_empty() {
        bail!("{flag} runs a private copy the lab starts: no URL and no --process");
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

/// The tree as the advisor's reader sees it (a syntax error names its file and line).
pub(crate) fn read_tree(server: Server, file: &Path) -> anyhow::Result<ConfigTree> {
    Ok(match server {
        Server::Nginx => {
            let parsed = webtune_advise::nginx::read(file)?.parsed;
            let root = parsed.main.parent().unwrap_or(Path::new("/")).to_path_buf();
            tree(server, parsed, root, BTreeMap::new())
        }
        Server::Apache => {
            let config = webtune_advise::apache::read(file, &[])?;
            tree(server, config.parsed, config.server_root, config.env)
        }
        Server::PhpFpm => ini_tree(server, file, webtune_advise::ini::Dialect::PhpFpm)?,
        Server::MariaDb => ini_tree(server, file, webtune_advise::ini::Dialect::MyCnf)?,
    })
}

/// An ini tree (php-fpm's, my.cnf): copies keep their place under the main file's
/// directory.
fn ini_tree(
    server: Server,
    file: &Path,
    dialect: webtune_advise::ini::Dialect,
) -> anyhow::Result<ConfigTree> {
    let parsed = webtune_advise::ini::read(file, dialect)?;
    let root = parsed.main.parent().unwrap_or(Path::new("/")).to_path_buf();
    Ok(tree(server, parsed, root, BTreeMap::new()))
}

fn tree(
    server: Server,
    parsed: Parsed,
    root: std::path::PathBuf,
    env: BTreeMap<String, String>,
) -> ConfigTree {
    ConfigTree {
        server,
        main: parsed.main,
        root,
        files: parsed.files,
        directives: parsed
            .directives
            .into_iter()
            .map(|d| Located {
                name: d.name,
                args: d.args,
                file: d.file,
                line: d.line,
                context: d.context,
                block: d.block,
            })
            .collect(),
        env,
    }
}
