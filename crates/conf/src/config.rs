//! The shape every reader produces: a flat list of directives in file order, each with the
//! file and line it came from and the blocks around it.

use serde::Serialize;
use std::path::PathBuf;

/// One directive (or one ini key) as the server would see it after includes and
/// conditionals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Directive {
    /// The name as written (`MaxClients`, `worker_connections`, `pm.max_children`).
    pub name: String,
    /// Arguments after variable expansion, quotes removed.
    pub args: Vec<String>,
    pub file: PathBuf,
    pub line: usize,
    /// Enclosing blocks, outermost first, e.g. `["http", "server", "location /"]`,
    /// `["VirtualHost *:80"]`, or the ini section `["mysqld"]`.
    pub context: Vec<String>,
    /// Index of the innermost enclosing block (nginx: to tell two `server` blocks apart;
    /// 0 at top level).
    pub block: usize,
}

impl Directive {
    /// `file:line`, the form evidence is given in.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }

    /// The first argument, or "".
    pub fn value(&self) -> &str {
        self.args.first().map(String::as_str).unwrap_or("")
    }

    /// All arguments joined by spaces.
    pub fn joined(&self) -> String {
        self.args.join(" ")
    }

    /// The first argument as an integer, when it is one.
    pub fn int(&self) -> Option<i64> {
        self.value().trim().parse().ok()
    }

    /// Is this directive inside a block whose name starts with `kind`?
    pub fn inside(&self, kind: &str) -> bool {
        self.context
            .iter()
            .any(|c| c.split_whitespace().next() == Some(kind))
    }
}

/// A parsed configuration tree.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Parsed {
    /// The main file.
    pub main: PathBuf,
    /// Every file read, in the order read.
    pub files: Vec<PathBuf>,
    pub directives: Vec<Directive>,
}

impl Parsed {
    /// Every directive called `name` (ASCII case-insensitive), in file order.
    pub fn all(&self, name: &str) -> impl Iterator<Item = &Directive> + '_ {
        let name = name.to_string();
        self.directives
            .iter()
            .filter(move |d| d.name.eq_ignore_ascii_case(&name))
    }

    /// The last directive called `name` at any depth (the one that wins for a global
    /// setting).
    pub fn last(&self, name: &str) -> Option<&Directive> {
        self.all(name).last()
    }

    /// The last directive called `name` outside any block.
    pub fn last_global(&self, name: &str) -> Option<&Directive> {
        self.all(name).filter(|d| d.context.is_empty()).last()
    }
}
