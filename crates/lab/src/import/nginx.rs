//! The edits that run an imported nginx config privately: every `listen` to a loopback
//! port of the copy's, pid, logs, temp and cache paths, includes to the copy, the worker
//! account as root, and the `--set` overrides in place.

use super::edit::Edit;
use super::listen::{parse_listen, Listen};
use super::Import;
use crate::render::Layout;
use crate::LabError;
use std::collections::HashMap;
use std::path::Path;

/// Directives the import itself rewrites: `--set` may not touch them.
pub(super) const NGINX_OWNED: &[&str] = &[
    "listen",
    "pid",
    "user",
    "include",
    "error_log",
    "access_log",
    "daemon",
    "master_process",
    "load_module",
];
pub(super) const NGINX_TEMP: &[(&str, &str)] = &[
    ("client_body_temp_path", "client_body"),
    ("proxy_temp_path", "proxy"),
    ("fastcgi_temp_path", "fastcgi"),
    ("uwsgi_temp_path", "uwsgi"),
    ("scgi_temp_path", "scgi"),
];

impl Import {
    pub(super) fn nginx_edits(
        &self,
        dir: &Path,
        layout: &Layout,
        ports: &HashMap<(String, u16), u16>,
    ) -> Result<Vec<Edit>, LabError> {
        let mut edits = Vec::new();
        let mut served_blocks: Vec<usize> = Vec::new();
        let mut emitted: Vec<(usize, u16)> = Vec::new();
        let temp = dir.join("temp");
        let mut cache = 0;
        for d in &self.tree.directives {
            let replace = |text: String| Edit::replace(d, text);
            match d.name.as_str() {
                "listen" => match parse_listen(d.value()) {
                    Listen::Unix => edits.push(Edit::remove(d)),
                    Listen::Inet { address, port, v6 } => {
                        let key = if v6 {
                            ("*".to_string(), port)
                        } else {
                            (address, port)
                        };
                        let private = match ports.get(&key) {
                            // An IPv6 twin of an IPv4 listen: the copy listens once.
                            Some(p) if !(v6 && self.has_v4(port)) => *p,
                            _ => {
                                edits.push(Edit::remove(d));
                                continue;
                            }
                        };
                        if emitted.contains(&(d.block, private)) {
                            edits.push(Edit::remove(d));
                            continue;
                        }
                        emitted.push((d.block, private));
                        served_blocks.push(d.block);
                        let mut args = vec![format!("127.0.0.1:{private}")];
                        args.extend(
                            d.args
                                .iter()
                                .skip(1)
                                .filter(|a| !a.starts_with("ipv6only"))
                                .cloned(),
                        );
                        edits.push(replace(format!("listen {};", args.join(" "))));
                    }
                },
                "pid" | "daemon" | "master_process" => edits.push(Edit::remove(d)),
                "user" => {
                    if layout.privileged {
                        edits.push(Edit::remove(d));
                    }
                }
                "error_log" => {
                    let mut args = vec![dir.join("error.log").display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("error_log {};", args.join(" "))));
                }
                "access_log" if d.value() != "off" => {
                    let mut args = vec![dir.join("access.log").display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("access_log {};", args.join(" "))));
                }
                "include" => {
                    let copied = self.copied_include(dir, d.value());
                    edits.push(replace(format!("include {copied};")));
                }
                name if name.ends_with("_temp_path") => {
                    let sub = name.trim_end_matches("_temp_path");
                    let mut args = vec![temp.join(sub).display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("{name} {};", args.join(" "))));
                }
                name if name.ends_with("_cache_path") => {
                    cache += 1;
                    let mut args = vec![temp.join(format!("cache{cache}")).display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("{name} {};", args.join(" "))));
                }
                name => {
                    if let Some((_, value)) = self.overrides.iter().find(|(n, _)| n == name) {
                        edits.push(replace(format!("{name} {value};")));
                    }
                }
            }
        }
        // Every server block listens on loopback (one without `listen` would take *:80).
        let front_port = layout.ports[self.front];
        let mut blocks_seen = Vec::new();
        for d in &self.tree.directives {
            let in_server = d.context.last().map(String::as_str) == Some("server")
                && d.context.first().map(String::as_str) == Some("http");
            if in_server && !served_blocks.contains(&d.block) && !blocks_seen.contains(&d.block) {
                blocks_seen.push(d.block);
                edits.push(Edit::prefix(d, format!("listen 127.0.0.1:{front_port}; ")));
            }
        }
        // Temp paths and the access log the copy would otherwise take from the defaults.
        if let Some(first) = self
            .tree
            .directives
            .iter()
            .find(|d| d.context.len() == 1 && d.context[0] == "http")
        {
            let at_http = |name: &str| {
                self.tree
                    .directives
                    .iter()
                    .any(|d| d.name == name && d.context.len() == 1 && d.context[0] == "http")
            };
            let mut text = String::new();
            for (name, sub) in NGINX_TEMP {
                if !at_http(name) {
                    text.push_str(&format!("{name} {}; ", temp.join(sub).display()));
                }
            }
            if !at_http("access_log") {
                text.push_str(&format!(
                    "access_log {}; ",
                    dir.join("access.log").display()
                ));
            }
            edits.push(Edit::prefix(first, text));
        } else if self
            .tree
            .directives
            .iter()
            .any(|d| d.context.first().map(String::as_str) == Some("http"))
        {
            return Err(LabError::Inconsistent(format!(
                "{}: the http block holds only blocks: webtune needs one directive in it to place its private temp paths",
                self.tree.main.display()
            )));
        }
        Ok(edits)
    }

    fn has_v4(&self, port: u16) -> bool {
        self.tree.directives.iter().any(|d| {
            d.name == "listen"
                && matches!(parse_listen(d.value()), Listen::Inet { port: p, v6: false, .. } if p == port)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::import::edit::{nginx_edit, nginx_statement, EditKind};

    #[test]
    fn nginx_statements_are_found_and_replaced_in_place() {
        let line = "  server { listen 80; listen 81 ssl; } # listen 82;";
        let edited = nginx_edit(line, "listen", 1, &EditKind::Replace("listen 1;".into())).unwrap();
        assert_eq!(edited, "  server { listen 80; listen 1; } # listen 82;");
        let removed = nginx_edit("pid /run/nginx.pid;", "pid", 0, &EditKind::Remove).unwrap();
        assert_eq!(removed, " # webtune removed: pid /run/nginx.pid;");
        assert!(nginx_edit("listen 80", "listen", 0, &EditKind::Remove).is_none());
        // A name that is only the start of another word is not the directive.
        assert!(nginx_statement("listener 80;", "listen", 0).is_none());
    }
}
