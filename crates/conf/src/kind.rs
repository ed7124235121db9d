//! What kind of config a file is, from its own lines, so that a file given for the wrong
//! server (`--mysql-config nginx.conf`) is refused in one line instead of read as nonsense:
//! nginx's grammar ends statements with `;` and opens blocks with `{`; Apache's has
//! `<Section>` lines and CamelCase directives; the ini dialects have `[section]` lines and
//! `key = value`, told apart by their section names and keys. A file too short or too
//! plain to tell is accepted.

use crate::error::ReadError;
use std::path::Path;

/// The kinds of config the readers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Apache,
    PhpFpm,
    MyCnf,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nginx => "an nginx config",
            Kind::Apache => "an Apache config",
            Kind::PhpFpm => "a php-fpm config",
            Kind::MyCnf => "a my.cnf (MariaDB/MySQL)",
        }
    }
}

/// The section names of my.cnf's programs.
const MYCNF_SECTIONS: &[&str] = &[
    "mysqld",
    "client",
    "mysql",
    "mysqld_safe",
    "mariadb",
    "mariadbd",
    "server",
    "galera",
    "client-server",
    "mysqldump",
    "embedded",
    "mysqladmin",
    "client-mariadb",
    "mariadb-client",
    "xtrabackup",
    "sst",
    "mysqld_multi",
    "isamchk",
    "myisamchk",
    "mysqlhotcopy",
];

const KINDS: [Kind; 4] = [Kind::Nginx, Kind::Apache, Kind::PhpFpm, Kind::MyCnf];

/// The votes of each kind (in `KINDS` order) and the first line that voted for each.
type Votes = ([usize; 4], [Option<(usize, String)>; 4]);

/// What the lines of `text` say the file is, with the first line that says so.
pub fn detect(text: &str) -> Option<(Kind, usize, String)> {
    let (score, first) = votes(text);
    let (best, &top) = score.iter().enumerate().max_by_key(|(_, s)| **s)?;
    if top < 2 {
        return None;
    }
    let (line, text) = first[best].clone()?;
    Some((KINDS[best], line, text))
}

fn votes(text: &str) -> Votes {
    let mut score = [0usize; 4]; // nginx, apache, php-fpm, my.cnf
    let mut first: [Option<(usize, String)>; 4] = Default::default();
    let mut vote = |k: usize, n: usize, line: usize, t: &str, score: &mut [usize; 4]| {
        score[k] += n;
        if first[k].is_none() {
            first[k] = Some((line, t.to_string()));
        }
    };
    for (i, raw) in text.lines().take(2000).enumerate() {
        let t = raw.trim();
        let line = i + 1;
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let short: String = t.chars().take(40).collect();
        if t.starts_with("!include") {
            vote(3, 3, line, &short, &mut score);
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let name = name.trim().to_ascii_lowercase();
            if MYCNF_SECTIONS.contains(&name.as_str())
                || name.starts_with("mysqld-")
                || name.starts_with("mariadb-")
            {
                vote(3, 3, line, &short, &mut score);
            } else if name == "global" || name == "www" {
                vote(2, 3, line, &short, &mut score);
            }
            continue;
        }
        if t.starts_with('<') && t.ends_with('>') {
            vote(1, 2, line, &short, &mut score);
            continue;
        }
        if t.ends_with(';') || t.ends_with('{') || t == "}" {
            vote(0, 1, line, &short, &mut score);
            continue;
        }
        let first_word = t.split_whitespace().next().unwrap_or("");
        if let Some((key, _)) = t.split_once('=') {
            let key = key.trim();
            if !key.contains(' ') {
                if key.starts_with("pm.")
                    || key.starts_with("php_admin_")
                    || key.starts_with("php_value")
                    || key.starts_with("php_flag")
                    || key.starts_with("listen.")
                    || key.starts_with("request_")
                {
                    vote(2, 2, line, &short, &mut score);
                } else if key.starts_with("innodb") || key == "max_connections" || key == "datadir"
                {
                    vote(3, 2, line, &short, &mut score);
                }
                continue;
            }
        }
        if first_word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase())
            && first_word.chars().all(|c| c.is_ascii_alphanumeric())
        {
            vote(1, 1, line, &short, &mut score);
        }
    }
    (score, first)
}

/// Refuse `text` (the main file `path`) when its lines say it is plainly another kind
/// than `expected`.
pub(crate) fn check(path: &Path, text: &str, expected: Kind) -> Result<(), ReadError> {
    let Some((kind, line, said)) = detect(text) else {
        return Ok(());
    };
    let (score, _) = votes(text);
    let mine = score[KINDS.iter().position(|k| *k == expected).unwrap_or(0)];
    let top = score.iter().copied().max().unwrap_or(0);
    // Refused only when plainly another kind: a few stray lines do not decide.
    if kind == expected || mine * 3 >= top {
        return Ok(());
    }
    Err(ReadError::syntax(
        path,
        line,
        format!(
            "not {}: it reads as {} (`{said}`)",
            expected.name(),
            kind.name()
        ),
    ))
}
