//! nginx's configuration: the token grammar of nginx (words, quoted strings, `;`, blocks in
//! braces, `#` comments) and `include` with wildcards (relative to the main file's
//! directory), flattened into directives that know their blocks (`events`, `http`,
//! `upstream NAME`, `server`, `location …`). What it takes in is capped (`limits`).

use crate::config::{Directive, Options, Parsed};
use crate::error::ReadError;
use crate::include::{self, Missing, Site};
use crate::limits::{self, Budget, MAX_NESTING};
use std::path::{Path, PathBuf};

/// nginx's configuration after includes.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NginxConfig {
    pub parsed: Parsed,
}

impl NginxConfig {
    /// The last directive `name` directly inside the block path `context` (e.g. `[]`,
    /// `["events"]`, `["http"]`).
    pub fn at_level(&self, name: &str, context: &[&str]) -> Option<&Directive> {
        self.parsed
            .all(name)
            .filter(|d| {
                d.context.len() == context.len()
                    && d.context.iter().zip(context).all(|(a, b)| a == b)
            })
            .last()
    }

    /// `worker_processes` as a number (`auto` = the host's cores); nginx's default is 1.
    pub fn worker_processes(&self, cores: u32) -> (u32, Option<&Directive>) {
        match self.at_level("worker_processes", &[]) {
            Some(d) if d.value() == "auto" => (cores.max(1), Some(d)),
            Some(d) => (d.int().unwrap_or(1).max(1) as u32, Some(d)),
            None => (1, None),
        }
    }

    /// `worker_connections` (nginx's default 512).
    pub fn worker_connections(&self) -> (i64, Option<&Directive>) {
        match self.at_level("worker_connections", &["events"]) {
            Some(d) => (d.int().unwrap_or(512), Some(d)),
            None => (512, None),
        }
    }

    /// Every `proxy_pass` (the reverse-proxy locations).
    pub fn proxy_passes(&self) -> Vec<&Directive> {
        self.parsed.all("proxy_pass").collect()
    }

    /// The `upstream NAME` blocks' names with their block ids.
    pub fn upstreams(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for d in &self.parsed.directives {
            if let Some(last) = d.context.last() {
                if let Some(name) = last.strip_prefix("upstream ") {
                    if !out.iter().any(|(_, b)| *b == d.block) {
                        out.push((name.to_string(), d.block));
                    }
                }
            }
        }
        out
    }

    /// Every `listen` with its backlog (nginx's default on Linux is 511).
    pub fn listens(&self) -> Vec<(&Directive, i64)> {
        self.parsed
            .all("listen")
            .filter(|d| d.inside("server") && d.inside("http"))
            .map(|d| {
                let backlog = d
                    .args
                    .iter()
                    .find_map(|a| a.strip_prefix("backlog=")?.parse().ok())
                    .unwrap_or(511);
                (d, backlog)
            })
            .collect()
    }
}

/// Read nginx's configuration from its main file.
pub fn read(main: &Path) -> Result<NginxConfig, ReadError> {
    read_with(main, &Options::default())
}

/// Read nginx's configuration from its main file, absolute paths under `opts.root`. The
/// prefix (what relative includes are relative to) is the main file's directory, as for
/// `nginx -c FILE`.
pub fn read_with(main: &Path, opts: &Options) -> Result<NginxConfig, ReadError> {
    let main = if main.is_absolute() {
        main.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(main))
            .unwrap_or_else(|_| main.to_path_buf())
    };
    let prefix = main
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut r = Reader {
        parsed: Parsed {
            main: main.clone(),
            ..Parsed::default()
        },
        prefix,
        blocks: 0,
        budget: Budget::default(),
        opts: opts.clone(),
    };
    r.file(&main, &[], 0, 0, None)?;
    Ok(NginxConfig { parsed: r.parsed })
}

struct Reader {
    parsed: Parsed,
    prefix: PathBuf,
    blocks: usize,
    budget: Budget,
    opts: Options,
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Semicolon,
    Open,
    Close,
}

/// nginx's tokens with their line numbers.
fn tokenize(text: &str, path: &Path) -> Result<Vec<(Token, usize)>, ReadError> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '#' => {
                for ch in chars.by_ref() {
                    if ch == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            ';' => out.push((Token::Semicolon, line)),
            '{' => out.push((Token::Open, line)),
            '}' => out.push((Token::Close, line)),
            '"' | '\'' => {
                let start = line;
                let mut word = String::new();
                let mut closed = false;
                while let Some(ch) = chars.next() {
                    if ch == '\\' {
                        if let Some(n) = chars.next() {
                            if n == '\n' {
                                line += 1;
                            }
                            word.push(n);
                        }
                    } else if ch == c {
                        closed = true;
                        break;
                    } else {
                        if ch == '\n' {
                            line += 1;
                        }
                        word.push(ch);
                    }
                }
                if !closed {
                    return Err(ReadError::syntax(path, start, "unterminated quoted string"));
                }
                out.push((Token::Word(word), start));
            }
            _ => {
                let mut word = String::from(c);
                while let Some(&ch) = chars.peek() {
                    if ch.is_whitespace() || ch == ';' || ch == '{' || ch == '}' {
                        break;
                    }
                    // `${var}` keeps its braces inside a word.
                    if ch == '$' {
                        word.push(ch);
                        chars.next();
                        if chars.peek() == Some(&'{') {
                            for inner in chars.by_ref() {
                                word.push(inner);
                                if inner == '}' {
                                    break;
                                }
                            }
                        }
                        continue;
                    }
                    word.push(ch);
                    chars.next();
                }
                out.push((Token::Word(word), line));
            }
        }
    }
    Ok(out)
}

impl Reader {
    fn file(
        &mut self,
        path: &Path,
        context: &[String],
        block: usize,
        depth: usize,
        from: Option<&Site<'_>>,
    ) -> Result<(), ReadError> {
        if depth > limits::MAX_INCLUDE_DEPTH {
            return Err(limits::includes_too_deep(path));
        }
        let text = match from {
            None => {
                let text = self.budget.read(path, None)?;
                crate::kind::check(path, &text, crate::kind::Kind::Nginx)?;
                text
            }
            Some(site) => {
                match include::read(&mut self.budget, path, site, &mut self.parsed.notes)? {
                    Some(text) => text,
                    None => return Ok(()),
                }
            }
        };
        self.parsed.files.push(path.to_path_buf());
        let tokens = tokenize(&text, path)?;
        let mut ctx: Vec<String> = context.to_vec();
        let mut blocks: Vec<(usize, usize)> = vec![(block, 0)]; // (block id, line opened)
        let mut words: Vec<String> = Vec::new();
        let mut first_line = 0;
        for (token, line) in tokens {
            match token {
                Token::Word(w) => {
                    if words.is_empty() {
                        first_line = line;
                    }
                    words.push(w);
                }
                Token::Semicolon => {
                    if words.is_empty() {
                        return Err(ReadError::syntax(path, line, "unexpected \";\""));
                    }
                    let name = words.remove(0);
                    let args = std::mem::take(&mut words);
                    let current = blocks.last().map_or(0, |b| b.0);
                    if name == "include" {
                        let Some(target) = args.first() else {
                            return Err(ReadError::syntax(
                                path,
                                first_line,
                                "include needs a path",
                            ));
                        };
                        let resolved = include::resolve(target, &self.prefix, &self.opts);
                        let tree = self.prefix.clone();
                        let site = Site {
                            file: path,
                            line: first_line,
                            directive: "include",
                            written: target,
                            tree: &tree,
                            missing: Missing::Warn,
                            dirs: false,
                        };
                        let files =
                            include::files(&resolved, &site, &self.opts, &mut self.parsed.notes)?;
                        for f in files {
                            self.file(&f, &ctx, current, depth + 1, Some(&site))?;
                        }
                    }
                    let directive = Directive {
                        name,
                        args,
                        file: path.to_path_buf(),
                        line: first_line,
                        context: ctx.clone(),
                        block: current,
                    };
                    self.budget.keep(&directive)?;
                    self.parsed.directives.push(directive);
                }
                Token::Open => {
                    if words.is_empty() {
                        return Err(ReadError::syntax(path, line, "unexpected \"{\""));
                    }
                    if ctx.len() >= MAX_NESTING {
                        return Err(limits::nested_too_deep(path, first_line));
                    }
                    let label = std::mem::take(&mut words).join(" ");
                    self.blocks += 1;
                    blocks.push((self.blocks, first_line));
                    ctx.push(label);
                }
                Token::Close => {
                    if !words.is_empty() {
                        return Err(ReadError::syntax(
                            path,
                            first_line,
                            format!("\"{}\" is not terminated by \";\"", words[0]),
                        ));
                    }
                    if blocks.len() <= 1 {
                        return Err(ReadError::syntax(path, line, "unexpected \"}\""));
                    }
                    blocks.pop();
                    ctx.pop();
                }
            }
        }
        if !words.is_empty() {
            return Err(ReadError::syntax(
                path,
                first_line,
                format!(
                    "\"{}\" is not terminated by \";\" (unexpected end of file)",
                    words[0]
                ),
            ));
        }
        if blocks.len() > 1 {
            let (_, opened) = blocks[blocks.len() - 1];
            return Err(ReadError::syntax(
                path,
                opened,
                "block is never closed (unexpected end of file, expecting \"}\")",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_includes_and_listen_backlog() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sites")).unwrap();
        std::fs::write(
            d.path().join("sites/a"),
            "server {\n listen 127.0.0.1:80 backlog=4096 reuseport;\n location / { proxy_pass http://app; }\n}\n",
        )
        .unwrap();
        let main = d.path().join("nginx.conf");
        std::fs::write(
            &main,
            "worker_processes auto; # comment\nevents { worker_connections 2048; }\nhttp {\n upstream app { server 127.0.0.1:8080; keepalive 16; }\n log_format x '$remote_addr \"q\"';\n include sites/*;\n}\n",
        )
        .unwrap();
        let c = read(&main).unwrap();
        assert_eq!(c.worker_processes(4).0, 4);
        let (wc, at) = c.worker_connections();
        assert_eq!(wc, 2048);
        assert!(at.unwrap().at().ends_with("nginx.conf:2"));
        assert_eq!(c.upstreams()[0].0, "app");
        let l = c.listens();
        assert_eq!(l[0].1, 4096);
        assert!(l[0].0.at().ends_with("sites/a:2"));
        assert_eq!(
            c.proxy_passes()[0].context,
            vec!["http", "server", "location /"]
        );
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let main = d.path().join("n.conf");
        std::fs::write(&main, "events {\n worker_connections 10\n}\n").unwrap();
        let e = read(&main).unwrap_err().to_string();
        assert!(
            e.ends_with("n.conf:2: \"worker_connections\" is not terminated by \";\""),
            "{e}"
        );
        std::fs::write(&main, "http {\n sendfile on;\n").unwrap();
        let e = read(&main).unwrap_err().to_string();
        assert!(e.contains("n.conf:1: block is never closed"), "{e}");
        std::fs::write(&main, "}\n").unwrap();
        assert!(read(&main)
            .unwrap_err()
            .to_string()
            .contains("n.conf:1: unexpected"));
    }
}
