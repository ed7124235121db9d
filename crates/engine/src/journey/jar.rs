//! A virtual user's cookie jar: the subset of RFC 6265 one target needs. `Set-Cookie` is
//! parsed as §5.2 says (name=value, then `Path`, `Domain`, `Expires`, `Max-Age`, `Secure`;
//! `HttpOnly` and unknown attributes ignored, Max-Age before Expires); a cookie whose
//! `Domain` does not match the target's host is refused (§5.3 step 6); `Cookie` holds the
//! cookies whose path matches (§5.1.4), longest path first (§5.4), unexpired, `Secure`
//! ones only over TLS.
//!
//! Written here rather than taken from the `cookie` crate: that one parses one header into
//! a `Cookie` but keeps no jar (matching, expiry, replacement), and `cookie_store` brings a
//! public-suffix list and `url` parsing per request that a single-host jar does not need.

use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone)]
struct Cookie {
    name: Vec<u8>,
    value: Vec<u8>,
    path: Vec<u8>,
    expires: Option<Instant>,
    secure: bool,
}

/// One virtual user's cookies for the target.
#[derive(Debug, Clone, Default)]
pub struct Jar {
    cookies: Vec<Cookie>,
}

impl Jar {
    /// Cookies held now (expired ones included until the next request drops them).
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Store one `Set-Cookie` value received for a request to `request_path` on `host`.
    pub fn store(&mut self, header: &[u8], request_path: &[u8], host: &str, now: Instant) {
        let mut parts = header.split(|&b| b == b';');
        let pair = parts.next().unwrap_or_default();
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            return; // §5.2 step 2: no '=' in the pair, ignore the cookie
        };
        let name = pair[..eq].trim_ascii();
        let value = pair[eq + 1..].trim_ascii();
        if name.is_empty() {
            return;
        }
        let mut path: Option<Vec<u8>> = None;
        let mut max_age: Option<i64> = None;
        let mut expires: Option<SystemTime> = None;
        let mut secure = false;
        for attr in parts {
            let (key, val) = match attr.iter().position(|&b| b == b'=') {
                Some(at) => (attr[..at].trim_ascii(), attr[at + 1..].trim_ascii()),
                None => (attr.trim_ascii(), &b""[..]),
            };
            if key.eq_ignore_ascii_case(b"path") {
                path = val.starts_with(b"/").then(|| val.to_vec());
            } else if key.eq_ignore_ascii_case(b"max-age") {
                max_age = std::str::from_utf8(val).ok().and_then(|v| v.parse().ok());
            } else if key.eq_ignore_ascii_case(b"expires") {
                expires = std::str::from_utf8(val)
                    .ok()
                    .and_then(|v| httpdate::parse_http_date(v).ok());
            } else if key.eq_ignore_ascii_case(b"secure") {
                secure = true;
            } else if key.eq_ignore_ascii_case(b"domain") {
                let domain = val.strip_prefix(b".").unwrap_or(val);
                if !domain.is_empty() && !domain_matches(host, domain) {
                    return; // §5.3 step 6: a cookie for another host is refused
                }
            }
        }
        let expires = match (max_age, expires) {
            (Some(secs), _) if secs <= 0 => Some(now),
            (Some(secs), _) => Some(now + Duration::from_secs(secs.unsigned_abs())),
            (None, Some(at)) => Some(match at.duration_since(SystemTime::now()) {
                Ok(ahead) => now + ahead,
                Err(_) => now, // a date in the past deletes the cookie
            }),
            (None, None) => None,
        };
        let path = path.unwrap_or_else(|| default_path(request_path));
        self.cookies.retain(|c| !(c.name == name && c.path == path));
        if expires.is_some_and(|at| at <= now) {
            return;
        }
        self.cookies.push(Cookie {
            name: name.to_vec(),
            value: value.to_vec(),
            path,
            expires,
            secure,
        });
        // §5.4 step 2: longer paths first; the sort is stable, so older first among equals.
        self.cookies
            .sort_by_key(|c| std::cmp::Reverse(c.path.len()));
    }

    /// Store every line of `lines` (the parser's kept `Set-Cookie` values).
    pub fn store_all(&mut self, lines: &[u8], request_path: &[u8], host: &str, now: Instant) {
        for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            self.store(line, request_path, host, now);
        }
    }

    /// Write the `Cookie` header's value for a request to `path` into `out` (cleared first;
    /// left empty when no cookie applies). Expired cookies are dropped.
    pub fn header_into(&mut self, path: &[u8], tls: bool, now: Instant, out: &mut Vec<u8>) {
        out.clear();
        self.cookies.retain(|c| c.expires.is_none_or(|at| at > now));
        let path = path_only(path);
        for c in &self.cookies {
            if (c.secure && !tls) || !path_matches(path, &c.path) {
                continue;
            }
            if !out.is_empty() {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(&c.name);
            out.push(b'=');
            out.extend_from_slice(&c.value);
        }
    }
}

/// The path without its query.
fn path_only(target: &[u8]) -> &[u8] {
    let end = target
        .iter()
        .position(|&b| b == b'?')
        .unwrap_or(target.len());
    &target[..end]
}

/// §5.1.4: the request path up to (not including) its last '/', or "/".
fn default_path(request_path: &[u8]) -> Vec<u8> {
    let path = path_only(request_path);
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) | None => b"/".to_vec(),
        Some(at) => path[..at].to_vec(),
    }
}

/// §5.1.4 path-match.
fn path_matches(request: &[u8], cookie: &[u8]) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with(b"/") || request.get(cookie.len()) == Some(&b'/')))
}

/// §5.1.3 domain-match, the host being the target's (an IP address matches only itself).
fn domain_matches(host: &str, domain: &[u8]) -> bool {
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    let host = host.as_bytes();
    if host.eq_ignore_ascii_case(domain) {
        return true;
    }
    !is_ip
        && host.len() > domain.len()
        && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
        && host[host.len() - domain.len() - 1] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(jar: &mut Jar, path: &str, tls: bool, now: Instant) -> String {
        let mut out = Vec::new();
        jar.header_into(path.as_bytes(), tls, now, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cookies_follow_path_expiry_secure_and_domain() {
        let now = Instant::now();
        let mut jar = Jar::default();
        jar.store(b"sid=abc; Path=/; HttpOnly", b"/login", "127.0.0.1", now);
        jar.store(b"pref=1", b"/forum/list?x=1", "127.0.0.1", now); // default path /forum
        jar.store(b"tls=1; Secure", b"/", "127.0.0.1", now);
        jar.store(b"other=1; Domain=example.com", b"/", "127.0.0.1", now);
        jar.store(b"short=1; Max-Age=10", b"/", "127.0.0.1", now);
        assert_eq!(header(&mut jar, "/", false, now), "sid=abc; short=1");
        assert_eq!(
            header(&mut jar, "/forum/7", false, now),
            "pref=1; sid=abc; short=1"
        );
        assert_eq!(header(&mut jar, "/forumx", false, now), "sid=abc; short=1");
        assert_eq!(header(&mut jar, "/", true, now), "sid=abc; tls=1; short=1");
        let later = now + Duration::from_secs(11);
        assert_eq!(header(&mut jar, "/", false, later), "sid=abc");
        // Replaced by name and path; deleted by a date in the past.
        jar.store(b"sid=new; Path=/", b"/", "127.0.0.1", now);
        assert_eq!(header(&mut jar, "/", false, now), "sid=new");
        jar.store(
            b"sid=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
            b"/",
            "h",
            now,
        );
        assert_eq!(header(&mut jar, "/", false, now), "");
    }

    #[test]
    fn a_domain_cookie_matches_the_host_and_its_subdomains_only() {
        let now = Instant::now();
        let mut jar = Jar::default();
        jar.store(b"a=1; Domain=.example.com", b"/", "www.example.com", now);
        jar.store(b"b=1; Domain=ample.com", b"/", "www.example.com", now);
        jar.store(b"c; Path=/", b"/", "www.example.com", now);
        assert_eq!(jar.len(), 1);
    }
}
