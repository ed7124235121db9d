//! Running an imported my.cnf (MariaDB or MySQL option files) privately, on the forum's
//! data. The server reads every option of the groups it reads in file order, and a later
//! value wins, so the copy is the user's files unchanged except for their `!include` and
//! `!includedir` lines (pointed at the copy), with a `[mariadbd]` group appended to the main
//! file that moves everything shared with the production server somewhere private: the data
//! directory (the forum's copy), socket, port (loopback), pid file, error log, the secure
//! file directory, binary logging (off: the forum only reads, and a binlog would grow in
//! the copy), the general and slow query logs and InnoDB's own directories where the user
//! set them, and, as root, `user = root` (the lab's files are root's). The overrides
//! (`--set db.NAME=VALUE`, named as the forum's database parameters are) go in that group
//! too, as `NAME = VALUE`.

use super::{Import, DB_PREFIX};
use crate::servers::mariadb::InstanceFiles;
use crate::servers::privileged;
use std::path::Path;

/// Keys the import sets itself (with `-` read as `_`): `--set` may not touch them.
pub(super) const MARIADB_OWNED: &[&str] = &[
    "datadir",
    "socket",
    "port",
    "bind_address",
    "pid_file",
    "log_error",
    "secure_file_priv",
    "log_bin",
    "skip_log_bin",
    "user",
    "skip_networking",
    "general_log_file",
    "slow_query_log_file",
    "innodb_data_home_dir",
    "innodb_log_group_home_dir",
    "innodb_undo_directory",
];

/// Keys naming a file the production server writes: in the copy's directory instead.
const LOG_FILES: &[(&str, &str)] = &[
    ("general_log_file", "general.log"),
    ("slow_query_log_file", "slow.log"),
];

/// InnoDB's directories, which must be the copy's data directory.
const DATA_DIRS: &[&str] = &[
    "innodb_data_home_dir",
    "innodb_log_group_home_dir",
    "innodb_undo_directory",
];

impl Import {
    /// A `!include`/`!includedir` line pointed at the copy; any other line as it is.
    pub(super) fn my_cnf_line(&self, dir: &Path, line: &str) -> String {
        let trimmed = line.trim_start();
        for directive in ["!includedir", "!include"] {
            if let Some(rest) = trimmed.strip_prefix(directive) {
                if rest.starts_with(char::is_whitespace) {
                    return format!(
                        "{directive} {}",
                        self.copied_include(dir, rest.trim().trim_end_matches('/'))
                    );
                }
            }
        }
        line.to_string()
    }

    /// The `[mariadbd]` group appended to the main file (see the module's header).
    pub(super) fn my_cnf_tail(&self, dir: &Path, port: u16) -> String {
        let files = InstanceFiles::in_dir(dir);
        let datadir = files.datadir.display().to_string();
        let mut tail = format!(
            "\n# Added by webtune lab: this copy runs privately (docs/lab.md, \"Your own config\").\n\
             [mariadbd]\n\
             datadir = {datadir}\n\
             socket = {}\n\
             port = {port}\n\
             bind-address = 127.0.0.1\n\
             pid-file = {}\n\
             log-error = {}\n\
             secure_file_priv = {}\n\
             skip-log-bin\n",
            files.socket.display(),
            dir.join("mariadbd.pid").display(),
            files.error_log.display(),
            dir.display(),
        );
        if privileged() {
            tail.push_str("user = root\n");
        }
        let has = |key: &str| self.tree.directives.iter().any(|d| d.name == key);
        for (key, file) in LOG_FILES {
            if has(key) {
                tail.push_str(&format!("{key} = {}\n", dir.join(file).display()));
            }
        }
        for key in DATA_DIRS {
            if has(key) {
                tail.push_str(&format!("{key} = {datadir}\n"));
            }
        }
        for (name, value) in &self.overrides {
            let option = name.strip_prefix(DB_PREFIX).unwrap_or(name);
            tail.push_str(&format!("{option} = {value}\n"));
        }
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{located, ConfigTree, Server};
    use std::collections::{BTreeMap, HashMap};
    use std::path::PathBuf;

    #[test]
    fn the_tail_moves_what_production_shares_and_includes_follow_the_copy() {
        let tree = ConfigTree {
            server: Server::MariaDb,
            main: PathBuf::from("/etc/mysql/my.cnf"),
            root: PathBuf::from("/etc/mysql"),
            copy_root: None,
            files: Vec::new(),
            directives: vec![
                located("datadir", &["/var/lib/mysql"], 3, &["mysqld"], 0),
                located(
                    "slow_query_log_file",
                    &["/var/log/s.log"],
                    4,
                    &["mysqld"],
                    0,
                ),
            ],
            env: BTreeMap::new(),
        };
        let import = Import {
            tree,
            texts: HashMap::new(),
            overrides: vec![("db.max_connections".into(), "300".into())],
            listens: vec![("mariadbd".into(), 0)],
            front: 0,
        };
        let dir = Path::new("/tmp/lab/db");
        let tail = import.my_cnf_tail(dir, 4200);
        for line in [
            "[mariadbd]\ndatadir = /tmp/lab/db/data\n",
            "socket = /tmp/lab/db/mariadb.sock\nport = 4200\nbind-address = 127.0.0.1\n",
            "log-error = /tmp/lab/db/mariadbd-error.log\n",
            "skip-log-bin\n",
            "slow_query_log_file = /tmp/lab/db/slow.log\n",
            "max_connections = 300\n",
        ] {
            assert!(tail.contains(line), "{line:?} in {tail}");
        }
        assert!(!tail.contains("general_log_file"));
        assert_eq!(
            import.my_cnf_line(dir, "!includedir /etc/mysql/conf.d/"),
            "!includedir /tmp/lab/db/conf/conf.d"
        );
        assert_eq!(
            import.my_cnf_line(dir, "!include /etc/other/x.cnf"),
            "!include /tmp/lab/db/conf/_outside/etc/other/x.cnf"
        );
        assert_eq!(import.my_cnf_line(dir, "port = 3306"), "port = 3306");
    }
}
