//! Who sends requests to whom: nginx's `proxy_pass` and `fastcgi_pass` targets (an
//! address and port, a Unix socket, an `upstream` block's servers), Apache's `Listen`,
//! Apache's handler to php-fpm (`SetHandler "proxy:unix:…|fcgi://…"`, `ProxyPass …
//! fcgi://…`) and each php-fpm pool's `listen`. A cross-layer rule applies only where a
//! target reaches the backend's listening address (issue 35, item 3): an nginx that
//! proxies to port 9999 says nothing about an Apache listening on 80.
//!
//! A target on another host cannot be told from this one's servers: only loopback targets
//! (127.x, localhost, ::1) reach a server listening on every address, and an address
//! written the same on both sides reaches itself.

use super::Layers;
use webtune_conf::config::Directive;
use webtune_conf::ini;
use webtune_conf::nginx::NginxConfig;

/// One end of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A host (empty, `*`, `0.0.0.0`, `::`: every address) and a port.
    Tcp { host: String, port: u16 },
    /// A Unix socket's path as written.
    Unix(String),
}

fn split_host_port(text: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default_port?,
        };
        return Some((host.to_ascii_lowercase(), port));
    }
    match t.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Some((h.to_ascii_lowercase(), p.parse().ok()?)),
        Some(_) => Some((t.to_ascii_lowercase(), default_port?)),
        None if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() => {
            Some((String::new(), t.parse().ok()?))
        }
        None => Some((t.to_ascii_lowercase(), default_port?)),
    }
}

impl Endpoint {
    /// A client's target: `127.0.0.1:8080`, `localhost`, `[::1]:80`, `unix:/run/x.sock`
    /// (a missing port is `default_port`). None for what cannot be read (`$backend`).
    pub fn target(text: &str, default_port: Option<u16>) -> Option<Endpoint> {
        let t = text.trim();
        if t.contains('$') {
            return None;
        }
        if let Some(path) = t.strip_prefix("unix:") {
            // nginx: `unix:/path:/uri`; Apache: `unix:/path|fcgi://…`.
            let path = path.split(['|', ':']).next().unwrap_or(path);
            return Some(Endpoint::Unix(path.to_string()));
        }
        let (host, port) = split_host_port(t, default_port)?;
        Some(Endpoint::Tcp { host, port })
    }

    /// A listening address: `80`, `127.0.0.1:80`, `[::]:80`, `*:80`, `/run/php.sock`.
    pub fn listen(text: &str) -> Option<Endpoint> {
        let t = text.trim();
        if t.starts_with('/') {
            return Some(Endpoint::Unix(t.to_string()));
        }
        if let Some(path) = t.strip_prefix("unix:") {
            return Some(Endpoint::Unix(path.to_string()));
        }
        let (host, port) = split_host_port(t, None)?;
        Some(Endpoint::Tcp { host, port })
    }

    /// Does a connection to `self` reach a server listening on `listen`?
    pub fn reaches(&self, listen: &Endpoint) -> bool {
        match (self, listen) {
            (Endpoint::Unix(a), Endpoint::Unix(b)) => a == b,
            (Endpoint::Tcp { host: h, port: p }, Endpoint::Tcp { host: lh, port: lp }) => {
                if p != lp {
                    return false;
                }
                let norm = |h: &str| match h {
                    "localhost" | "localhost.localdomain" => "127.0.0.1".to_string(),
                    "ip6-localhost" => "::1".to_string(),
                    other => other.to_string(),
                };
                let wildcard = matches!(lh.as_str(), "" | "*" | "0.0.0.0" | "::");
                let loopback = {
                    let h = norm(h);
                    h.starts_with("127.") || h == "::1"
                };
                norm(h) == norm(lh) || (wildcard && loopback)
            }
            _ => false,
        }
    }
}

/// Where an nginx `*_pass` sends: the target's endpoints (an upstream block's servers),
/// with the upstream block's id when it is one.
pub(crate) fn nginx_targets(n: &NginxConfig, pass: &Directive) -> (Vec<Endpoint>, Option<usize>) {
    let v = pass.value();
    let (rest, default_port) = if let Some(r) = v.strip_prefix("http://") {
        (r, Some(80))
    } else if let Some(r) = v.strip_prefix("https://") {
        (r, Some(443))
    } else {
        (v, None)
    };
    if rest.starts_with("unix:") {
        return (Endpoint::target(rest, None).into_iter().collect(), None);
    }
    let hostport = rest.split('/').next().unwrap_or(rest);
    let name = hostport.split(':').next().unwrap_or(hostport);
    if let Some((_, block)) = n.upstreams().into_iter().find(|(u, _)| u == name) {
        let servers = n
            .parsed
            .directives
            .iter()
            .filter(|d| d.block == block && d.name == "server")
            .filter_map(|d| Endpoint::target(d.value(), Some(80)))
            .collect();
        return (servers, Some(block));
    }
    (
        Endpoint::target(hostport, default_port)
            .into_iter()
            .collect(),
        None,
    )
}

/// Apache's listening addresses.
fn apache_listens(a: &webtune_conf::apache::ApacheConfig) -> Vec<(&Directive, Endpoint)> {
    a.parsed
        .all("Listen")
        .filter_map(|d| Some((d, Endpoint::listen(d.value())?)))
        .collect()
}

/// Where Apache hands PHP to php-fpm: `SetHandler "proxy:unix:…|fcgi://…"`,
/// `SetHandler "proxy:fcgi://HOST:PORT"`, `ProxyPass(Match) … fcgi://HOST:PORT/…`.
fn apache_fcgi_targets(a: &webtune_conf::apache::ApacheConfig) -> Vec<(&Directive, Endpoint)> {
    if !a.has_module("proxy_fcgi_module") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for d in &a.parsed.directives {
        let handler = d.name.eq_ignore_ascii_case("SetHandler");
        let pass = d.name.eq_ignore_ascii_case("ProxyPass")
            || d.name.eq_ignore_ascii_case("ProxyPassMatch");
        if !handler && !pass {
            continue;
        }
        for arg in &d.args {
            let a = arg.trim_start_matches("proxy:");
            let target = if a.starts_with("unix:") {
                Endpoint::target(a, None)
            } else if let Some(r) = a.strip_prefix("fcgi://") {
                Endpoint::target(r.split('/').next().unwrap_or(r), Some(9000))
            } else {
                None
            };
            if let Some(t) = target {
                out.push((d, t));
                break;
            }
        }
    }
    out
}

/// The pools' listening addresses: (pool, its `listen`).
fn fpm_listens(f: &webtune_conf::config::Parsed) -> Vec<(String, &Directive, Endpoint)> {
    ini::pools(f)
        .into_iter()
        .filter_map(|p| {
            let d = f
                .directives
                .iter()
                .rfind(|d| d.name == "listen" && d.context.first() == Some(&p.name))?;
            let e = Endpoint::listen(d.value())?;
            Some((p.name, d, e))
        })
        .collect()
}

/// Every nginx `fastcgi_pass` that reaches a php-fpm pool: the directive, the `upstream`
/// block it names (when it names one) and the first pool one of its targets reaches.
pub(crate) fn nginx_fpm_passes<'a>(
    n: &'a NginxConfig,
    f: &'a webtune_conf::config::Parsed,
) -> Vec<(&'a Directive, Option<usize>, String)> {
    let pools = fpm_listens(f);
    n.parsed
        .all("fastcgi_pass")
        .filter_map(|d| {
            let (targets, block) = nginx_targets(n, d);
            targets.iter().find_map(|target| {
                pools
                    .iter()
                    .find(|(_, _, e)| target.reaches(e))
                    .map(|(name, _, _)| (d, block, name.clone()))
            })
        })
        .collect()
}

/// The connections found between the layers read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topology<'a> {
    /// nginx → Apache: a `proxy_pass` (or the `upstream` it names) that reaches one of
    /// Apache's `Listen`, with that Listen and the upstream block's id.
    pub nginx_apache: Option<(&'a Directive, &'a Directive, Option<usize>)>,
    /// Apache → php-fpm: the handler and the pool it reaches.
    pub apache_fpm: Option<(&'a Directive, String)>,
    /// nginx → php-fpm: a `fastcgi_pass` and the pool it reaches.
    pub nginx_fpm: Option<(&'a Directive, String)>,
}

impl<'a> Topology<'a> {
    pub fn of(l: &Layers<'a>) -> Topology<'a> {
        let mut t = Topology::default();
        if let (Some(n), Some(a)) = (l.nginx, l.apache) {
            let listens = apache_listens(a);
            'pass: for p in n.proxy_passes() {
                let (targets, block) = nginx_targets(n, p);
                for target in &targets {
                    if let Some((listen, _)) = listens.iter().find(|(_, e)| target.reaches(e)) {
                        t.nginx_apache = Some((p, *listen, block));
                        break 'pass;
                    }
                }
            }
        }
        if let Some(f) = l.php_fpm {
            let pools = fpm_listens(f);
            if let Some(a) = l.apache {
                t.apache_fpm = apache_fcgi_targets(a).into_iter().find_map(|(d, target)| {
                    pools
                        .iter()
                        .find(|(_, _, e)| target.reaches(e))
                        .map(|(name, _, _)| (d, name.clone()))
                });
            }
            if let Some(n) = l.nginx {
                t.nginx_fpm = nginx_fpm_passes(n, f)
                    .into_iter()
                    .next()
                    .map(|(d, _, pool)| (d, pool));
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::Endpoint;

    #[test]
    fn targets_reach_listens() {
        let t = |s: &str| Endpoint::target(s, Some(80)).unwrap();
        let l = |s: &str| Endpoint::listen(s).unwrap();
        assert!(t("127.0.0.1:80").reaches(&l("80")));
        assert!(t("localhost").reaches(&l("*:80")));
        assert!(t("localhost").reaches(&l("127.0.0.1:80")));
        assert!(t("[::1]:8080").reaches(&l("[::]:8080")));
        assert!(!t("127.0.0.1:9999").reaches(&l("80")));
        assert!(!t("127.0.0.1:8080").reaches(&l("127.0.0.2:8080")));
        assert!(!t("10.0.0.5:80").reaches(&l("80")), "another host, perhaps");
        assert!(t("10.0.0.5:80").reaches(&l("10.0.0.5:80")));
        assert!(t("unix:/run/php/fpm.sock|fcgi://localhost").reaches(&l("/run/php/fpm.sock")));
        assert!(!t("unix:/run/a.sock").reaches(&l("/run/b.sock")));
        assert!(Endpoint::target("$backend", Some(80)).is_none());
    }
}
