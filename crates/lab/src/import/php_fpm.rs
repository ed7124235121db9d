//! Running an imported php-fpm config privately. php-fpm lets a later `[global]` or
//! `[pool]` section add to an earlier one, and the last value of a key wins, so the copy
//! is the user's files unchanged except for their `include=` lines (pointed at the copy),
//! with a block appended to the main file that moves everything shared with the
//! production server somewhere private: the pid file and error log, every pool's `listen`
//! (a loopback port of the copy's), its slow and access logs, its PHP error log, and its
//! `listen.allowed_clients`. The `--set` overrides go in that block too, in the pool the
//! load reaches (the first). The user's lines keep their numbers, so what php-fpm says
//! about the copy's `file:line` is the user's.
//!
//! Requests reach the pool through the lab's own nginx (FastCGI front end, rendered by
//! `servers::nginx`), which serves the lab's document root with its CPU-bound page
//! (`/cpu/US`).

use super::{ConfigTree, Import};
use crate::LabError;
use std::collections::HashMap;
use std::path::Path;

/// Keys the import sets itself: `--set` may not touch them.
pub(super) const PHP_FPM_OWNED: &[&str] = &[
    "listen",
    "listen.allowed_clients",
    "pid",
    "error_log",
    "include",
    "daemonize",
    "slowlog",
    "access.log",
    "chroot",
];

/// Pool keys that name a file the production server writes: the copy writes its own.
const POOL_FILES: &[(&str, &str)] = &[
    ("slowlog", "slow"),
    ("access.log", "access"),
    ("php_admin_value[error_log]", "php-error"),
    ("php_value[error_log]", "php-error"),
];

/// The pools of a tree (every section but `[global]`), in order of first appearance.
pub fn pools(tree: &ConfigTree) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for d in &tree.directives {
        if let Some(section) = d.context.first() {
            if section != "global" && !names.contains(section) {
                names.push(section.clone());
            }
        }
    }
    names
}

/// Refuse what a private copy cannot run: a pool fragment, no pool at all, or a chrooted
/// pool (the pages it would serve are in the lab's document root, outside any chroot).
pub(super) fn check(tree: &ConfigTree) -> Result<(), LabError> {
    // A fragment (keys before any section, read as the including pool's) runs only inside
    // the file that includes it.
    if pools(tree)
        .iter()
        .any(|p| p == webtune_conf::ini::FRAGMENT_POOL)
    {
        return Err(LabError::Inconsistent(format!(
            "{}: a pool fragment (keys before any [section]): php-fpm runs it only included after a pool's [name]; give the php-fpm.conf or the pool file that includes it",
            tree.main.display()
        )));
    }
    if pools(tree).is_empty() {
        return Err(LabError::Inconsistent(format!(
            "{}: no pool ([name] section): php-fpm would not start",
            tree.main.display()
        )));
    }
    if let Some(d) = tree.directives.iter().find(|d| d.name == "chroot") {
        return Err(LabError::Inconsistent(format!(
            "{}:{}: chroot {}: webtune cannot run a chrooted pool privately (the lab's pages are outside the chroot)",
            d.file.display(),
            d.line,
            d.args.join(" ")
        )));
    }
    Ok(())
}

impl Import {
    /// An `include=` line of `file` pointed at the copy; any other line as it is.
    pub(super) fn php_fpm_line(&self, dir: &Path, file: &Path, line: &str) -> String {
        let trimmed = line.trim_start();
        let Some(value) = trimmed
            .strip_prefix("include")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
        else {
            return line.to_string();
        };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        // A relative include is relative to the including file, as the advisor reads it.
        let original = file.parent().unwrap_or(Path::new("/")).join(value);
        let indent = &line[..line.len() - trimmed.len()];
        format!(
            "{indent}include = {}",
            self.copied_include(dir, &original.display().to_string())
        )
    }

    /// The block appended to the main file: `[global]` pid and log, then each pool's
    /// private listen and files, and the overrides in the front pool.
    pub(super) fn php_fpm_tail(&self, dir: &Path, ports: &HashMap<(String, u16), u16>) -> String {
        let mut tail = format!(
            "\n; Added by webtune lab: this copy runs privately (docs/lab.md, \"Your own config\").\n\
             [global]\npid = {}\nerror_log = {}\n",
            dir.join("run/php-fpm.pid").display(),
            dir.join("error.log").display()
        );
        for (i, pool) in pools(&self.tree).iter().enumerate() {
            let port = ports.get(&(pool.clone(), 0)).copied().unwrap_or(0);
            tail.push_str(&format!("[{pool}]\nlisten = 127.0.0.1:{port}\n"));
            let has = |key: &str| {
                self.tree
                    .directives
                    .iter()
                    .any(|d| d.name == key && d.context.first() == Some(pool))
            };
            if has("listen.allowed_clients") {
                tail.push_str("listen.allowed_clients = 127.0.0.1\n");
            }
            for (key, stem) in POOL_FILES {
                if has(key) {
                    tail.push_str(&format!(
                        "{key} = {}\n",
                        dir.join(format!("{stem}-{pool}.log")).display()
                    ));
                }
            }
            if i == self.front {
                for (name, value) in &self.overrides {
                    tail.push_str(&format!("{name} = {value}\n"));
                }
            }
        }
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{located, Server};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn tree(directives: Vec<webtune_conf::config::Directive>) -> ConfigTree {
        ConfigTree {
            server: Server::PhpFpm,
            main: PathBuf::from("/etc/php/8.2/fpm/php-fpm.conf"),
            root: PathBuf::from("/etc/php/8.2/fpm"),
            copy_root: None,
            files: Vec::new(),
            directives,
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn pools_are_the_sections_but_global_and_chroot_is_refused() {
        let t = tree(vec![
            located("pid", &["/run/php.pid"], 2, &["global"], 0),
            located("listen", &["/run/php/www.sock"], 5, &["www"], 0),
            located("listen", &["/run/php/api.sock"], 9, &["api"], 0),
        ]);
        assert_eq!(pools(&t), vec!["www".to_string(), "api".to_string()]);
        assert!(check(&t).is_ok());
        let e = check(&tree(vec![located("pid", &["x"], 2, &["global"], 0)])).unwrap_err();
        assert!(e.to_string().contains("no pool"), "{e}");
        let e = check(&tree(vec![located("chroot", &["/srv"], 7, &["www"], 0)])).unwrap_err();
        assert!(e.to_string().contains(":7: chroot /srv"), "{e}");
    }

    #[test]
    fn the_tail_moves_what_production_shares_and_sets_the_overrides_in_the_front_pool() {
        let t = tree(vec![
            located("listen", &["/run/php/www.sock"], 5, &["www"], 0),
            located("slowlog", &["/var/log/www-slow.log"], 6, &["www"], 0),
            located("listen", &["9001"], 9, &["api"], 0),
            located("listen.allowed_clients", &["10.0.0.1"], 10, &["api"], 0),
        ]);
        let import = Import {
            tree: t,
            texts: HashMap::new(),
            overrides: vec![("pm.max_children".into(), "12".into())],
            listens: vec![("www".into(), 0), ("api".into(), 0)],
            front: 0,
        };
        let ports: HashMap<(String, u16), u16> = [
            (("www".to_string(), 0), 4100),
            (("api".to_string(), 0), 4101),
        ]
        .into();
        let dir = Path::new("/tmp/lab/x");
        let tail = import.php_fpm_tail(dir, &ports);
        assert!(
            tail.contains(
                "[global]\npid = /tmp/lab/x/run/php-fpm.pid\nerror_log = /tmp/lab/x/error.log\n"
            ),
            "{tail}"
        );
        assert!(tail.contains("[www]\nlisten = 127.0.0.1:4100\nslowlog = /tmp/lab/x/slow-www.log\npm.max_children = 12\n"), "{tail}");
        assert!(
            tail.contains("[api]\nlisten = 127.0.0.1:4101\nlisten.allowed_clients = 127.0.0.1\n"),
            "{tail}"
        );
        assert!(!tail[tail.find("[api]").unwrap()..].contains("pm.max_children"));
        let line = import.php_fpm_line(
            dir,
            Path::new("/etc/php/8.2/fpm/php-fpm.conf"),
            "include=/etc/php/8.2/fpm/pool.d/*.conf",
        );
        assert_eq!(line, "include = /tmp/lab/x/conf/pool.d/*.conf");
        assert_eq!(
            import.php_fpm_line(dir, Path::new("/x"), "pm = static"),
            "pm = static"
        );
    }
}
