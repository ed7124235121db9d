//! What an imported nginx or Apache config listens on: each `listen`/`Listen` argument
//! read, the distinct addresses (each gets a private loopback port), and the one the load
//! goes to.

use super::ConfigTree;
use webtune_conf::config::Directive;

/// What a `listen`/`Listen` argument names.
#[derive(Debug, PartialEq)]
pub(super) enum Listen {
    Unix,
    Inet {
        address: String,
        port: u16,
        v6: bool,
    },
}

pub(super) fn parse_listen(arg: &str) -> Listen {
    if arg.starts_with("unix:") {
        return Listen::Unix;
    }
    let port_of = |p: &str| p.parse::<u16>().unwrap_or(80);
    if let Some(rest) = arg.strip_prefix('[') {
        let (_, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after.strip_prefix(':').map_or(80, port_of);
        return Listen::Inet {
            address: "*".into(),
            port,
            v6: true,
        };
    }
    match arg.rsplit_once(':') {
        Some((address, port)) => Listen::Inet {
            address: normal_address(address),
            port: port_of(port),
            v6: false,
        },
        None if arg.chars().all(|c| c.is_ascii_digit()) => Listen::Inet {
            address: "*".into(),
            port: port_of(arg),
            v6: false,
        },
        None => Listen::Inet {
            address: normal_address(arg),
            port: 80,
            v6: false,
        },
    }
}

pub(super) fn normal_address(address: &str) -> String {
    match address {
        "" | "*" | "0.0.0.0" => "*".into(),
        a => a.to_string(),
    }
}

/// The distinct addresses listened on, in order, and which one the load goes to (a
/// default server, else the first). IPv6 listens count only where no IPv4 listen has
/// their port.
pub(super) fn listen_keys(tree: &ConfigTree) -> (Vec<(String, u16)>, usize) {
    let listens: Vec<&Directive> = tree
        .directives
        .iter()
        .filter(|d| d.name.eq_ignore_ascii_case("listen"))
        .collect();
    let v4: Vec<u16> = listens
        .iter()
        .filter_map(|d| match parse_listen(d.value()) {
            Listen::Inet {
                port, v6: false, ..
            } => Some(port),
            _ => None,
        })
        .collect();
    let mut keys: Vec<(String, u16)> = Vec::new();
    let mut front = None;
    for d in listens {
        let key = match parse_listen(d.value()) {
            Listen::Inet { v6: true, port, .. } if v4.contains(&port) => continue,
            Listen::Inet { address, port, .. } => (address, port),
            Listen::Unix => continue,
        };
        let index = match keys.iter().position(|k| k == &key) {
            Some(i) => i,
            None => {
                keys.push(key);
                keys.len() - 1
            }
        };
        let default = d
            .args
            .iter()
            .any(|a| a == "default_server" || a == "default");
        if default && front.is_none() {
            front = Some(index);
        }
    }
    (keys, front.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{located, Server};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[test]
    fn listen_arguments_parse() {
        let inet = |a: &str, port, v6| Listen::Inet {
            address: a.into(),
            port,
            v6,
        };
        assert_eq!(parse_listen("80"), inet("*", 80, false));
        assert_eq!(
            parse_listen("127.0.0.1:8080"),
            inet("127.0.0.1", 8080, false)
        );
        assert_eq!(parse_listen("[::]:443"), inet("*", 443, true));
        assert_eq!(parse_listen("localhost"), inet("localhost", 80, false));
        assert_eq!(parse_listen("0.0.0.0:81"), inet("*", 81, false));
        assert_eq!(parse_listen("unix:/run/x.sock"), Listen::Unix);
    }

    #[test]
    fn v6_twins_listen_once_and_the_default_server_is_the_front() {
        let tree = ConfigTree {
            server: Server::Nginx,
            main: PathBuf::from("/etc/x/nginx.conf"),
            root: PathBuf::from("/etc/x"),
            copy_root: None,
            files: Vec::new(),
            directives: vec![
                located("listen", &["8080"], 1, &["http", "server"], 1),
                located(
                    "listen",
                    &["80", "default_server"],
                    2,
                    &["http", "server"],
                    2,
                ),
                located(
                    "listen",
                    &["[::]:80", "default_server"],
                    3,
                    &["http", "server"],
                    2,
                ),
                located("listen", &["[::]:9000"], 4, &["http", "server"], 3),
            ],
            env: BTreeMap::new(),
        };
        let (keys, front) = listen_keys(&tree);
        assert_eq!(
            keys,
            vec![
                ("*".to_string(), 8080),
                ("*".into(), 80),
                ("*".into(), 9000)
            ]
        );
        assert_eq!(front, 1);
    }
}
