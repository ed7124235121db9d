//! The edits that run an imported Apache config privately: `Listen` to loopback ports of
//! the copy's (and `<VirtualHost>` with them), pid, logs, runtime and mutex paths,
//! ServerRoot and includes to the copy, and the `--set` overrides in place.

use super::edit::Edit;
use super::listen::{normal_address, parse_listen, Listen};
use super::Import;
use std::collections::HashMap;
use std::path::Path;

pub(super) const APACHE_OWNED: &[&str] = &[
    "listen",
    "pidfile",
    "errorlog",
    "customlog",
    "transferlog",
    "include",
    "includeoptional",
    "serverroot",
    "mutex",
    "defaultruntimedir",
    "scriptsock",
    "user",
    "group",
    "loadmodule",
];
impl Import {
    pub(super) fn apache_edits(
        &self,
        dir: &Path,
        ports: &HashMap<(String, u16), u16>,
    ) -> Vec<Edit> {
        let mut edits = Vec::new();
        let run = dir.join("run");
        for d in &self.tree.directives {
            let replace = |text: String| Edit::replace(d, text);
            let rest = || d.args.iter().skip(1).cloned().collect::<Vec<_>>().join(" ");
            match d.name.to_ascii_lowercase().as_str() {
                "listen" => match parse_listen(d.value()) {
                    Listen::Inet { address, port, v6 } => {
                        let key = if v6 {
                            ("*".to_string(), port)
                        } else {
                            (address, port)
                        };
                        match ports.get(&key) {
                            Some(p) if !(v6 && self.has_apache_v4(port)) => {
                                edits.push(replace(format!("Listen 127.0.0.1:{p} {}", rest())))
                            }
                            _ => edits.push(Edit::remove(d)),
                        }
                    }
                    Listen::Unix => edits.push(Edit::remove(d)),
                },
                "pidfile" => edits.push(replace(format!(
                    "PidFile \"{}\"",
                    run.join("apache2.pid").display()
                ))),
                "errorlog" => edits.push(replace(format!(
                    "ErrorLog \"{}\"",
                    dir.join("error.log").display()
                ))),
                "customlog" | "transferlog" => edits.push(replace(format!(
                    "{} \"{}\" {}",
                    d.name,
                    dir.join("access.log").display(),
                    rest()
                ))),
                "defaultruntimedir" => {
                    edits.push(replace(format!("DefaultRuntimeDir \"{}\"", run.display())))
                }
                "mutex" => edits.push(replace(format!("Mutex file:{} {}", run.display(), rest()))),
                "scriptsock" => edits.push(replace(format!(
                    "ScriptSock \"{}\"",
                    run.join("cgisock").display()
                ))),
                "serverroot" => edits.push(replace(format!(
                    "ServerRoot \"{}\"",
                    dir.join("conf").display()
                ))),
                "lockfile" => edits.push(Edit::remove(d)),
                "include" | "includeoptional" => {
                    let copied = self.copied_include(dir, d.value());
                    edits.push(replace(format!("{} \"{copied}\"", d.name)));
                }
                _ => {
                    if let Some((_, value)) = self
                        .overrides
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(&d.name))
                    {
                        edits.push(replace(format!("{} {value}", d.name)));
                    }
                }
            }
        }
        edits
    }

    fn has_apache_v4(&self, port: u16) -> bool {
        self.tree.directives.iter().any(|d| {
            d.name.eq_ignore_ascii_case("listen")
                && matches!(parse_listen(d.value()), Listen::Inet { port: p, v6: false, .. } if p == port)
        })
    }
}

/// `<VirtualHost *:80>` on the port the copy listens on instead of 80.
pub(super) fn virtual_host_ports(line: &str, ports: &HashMap<(String, u16), u16>) -> String {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed
        .get(..12)
        .filter(|h| h.eq_ignore_ascii_case("<VirtualHost"))
        .map(|_| &trimmed[12..])
    else {
        return line.to_string();
    };
    let Some((inside, after)) = rest.split_once('>') else {
        return line.to_string();
    };
    let indent = &line[..line.len() - trimmed.len()];
    let addresses: Vec<String> = inside
        .split_whitespace()
        .map(|a| {
            let Some((host, port)) = a.rsplit_once(':') else {
                return a.to_string();
            };
            let Ok(port) = port.parse::<u16>() else {
                return a.to_string();
            };
            let exact = ports.get(&(normal_address(host), port));
            let any = ports.iter().find(|((_, p), _)| *p == port).map(|(_, v)| v);
            match exact.or(any) {
                Some(private) => format!("{host}:{private}"),
                None => a.to_string(),
            }
        })
        .collect();
    format!("{indent}<VirtualHost {}>{after}", addresses.join(" "))
}

/// A `Listen` the reader saw as inactive (in an `<IfModule>` of a module it thinks is
/// not loaded) is commented out all the same: were Apache to see it active, the copy
/// would listen beyond loopback.
pub(super) fn stray_listen(line: &str) -> String {
    let trimmed = line.trim_start();
    let first = trimmed.split_whitespace().next().unwrap_or("");
    if first.eq_ignore_ascii_case("listen") && !trimmed.contains(" 127.0.0.1:") {
        let indent = &line[..line.len() - trimmed.len()];
        return format!("{indent}# webtune removed: {trimmed}");
    }
    line.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_listens_left_unrewritten_are_commented_out() {
        assert_eq!(
            stray_listen("\tListen 443"),
            "\t# webtune removed: Listen 443"
        );
        assert_eq!(
            stray_listen("Listen 127.0.0.1:4100 "),
            "Listen 127.0.0.1:4100 "
        );
        assert_eq!(stray_listen("# Listen 80"), "# Listen 80");
    }

    #[test]
    fn virtual_hosts_follow_their_port() {
        let ports: HashMap<(String, u16), u16> = [(("*".to_string(), 80), 41000)].into();
        assert_eq!(
            virtual_host_ports("\t<VirtualHost *:80>", &ports),
            "\t<VirtualHost *:41000>"
        );
        assert_eq!(
            virtual_host_ports("<VirtualHost _default_:443>", &ports),
            "<VirtualHost _default_:443>"
        );
        assert_eq!(virtual_host_ports("ServerName x", &ports), "ServerName x");
    }
}
