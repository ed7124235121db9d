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

    /// The first argument as a count that cannot overflow: digits read as a whole
    /// number, saturating at `i64::MAX` (`pm.max_children = 18446744073709551615` is huge,
    /// not absent).
    pub fn count(&self) -> Option<i64> {
        let v = self.value().trim();
        if let Ok(n) = v.parse::<i64>() {
            return Some(n);
        }
        (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())).then_some(i64::MAX)
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
    /// What the reader could not follow (an include missing or unreadable: the tree was
    /// read on without it) or followed on the host's behalf (`crate::include`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<ReadNote>,
}

/// How much a `ReadNote` matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteLevel {
    /// A file the tree names was not read: what the rules see may be incomplete.
    Warning,
    /// Worth knowing (a wildcard that matched nothing, a host file read for the tree).
    Note,
}

/// One thing a reader could not follow or followed on the host's behalf, at the include
/// (or directive) that names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadNote {
    pub level: NoteLevel,
    /// `file:line` of the include (or directive); the file alone for the main file.
    pub at: String,
    /// The file (or pattern) it is about.
    pub target: PathBuf,
    /// One line, control characters escaped.
    pub message: String,
}

impl std::fmt::Display for ReadNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", escape(&self.at), self.message)
    }
}

/// How a tree is read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A copied tree's root: absolute paths in it (includes, ServerRoot, `!includedir`)
    /// are read under this directory, never from the host.
    pub root: Option<PathBuf>,
    /// Apache's `-D` names.
    pub defines: Vec<String>,
    /// Apache: the modules compiled into the httpd binary that reads the tree, by source
    /// file as `httpd -l` lists them (`core.c`, `event.c`); None when not known (a copied
    /// tree: the binary is not asked). A compiled-in MPM counts as loaded.
    pub compiled_in: Option<Vec<String>>,
}

impl Options {
    /// Where an absolute path of the tree lies: under `root` when there is one.
    pub fn rooted(&self, path: &std::path::Path) -> PathBuf {
        match &self.root {
            Some(root) if path.is_absolute() && !path.starts_with(root) => {
                root.join(path.strip_prefix("/").unwrap_or(path))
            }
            _ => path.to_path_buf(),
        }
    }
}

/// A text with control characters (NUL, escape, newlines…) written as `\0`, `\u{1b}`,
/// `\n`, so that a message stays one line and echoes nothing raw to the terminal.
pub fn escape(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c {
            '\0' => "\\0".to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
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
