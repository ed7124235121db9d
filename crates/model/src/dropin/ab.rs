//! ApacheBench's options with ab's meaning (`webtune ab`): the run they ask for
//! (`AbOptions::to_spec`), the ab options webtune refuses and what each does in ab, and
//! the words of `-v 2`'s exchange. The layout of ab's report is `webtune_report::ab`'s.

use super::{refuse, unchecked_tls, OptionError};
use crate::{RunSpec, StopCondition};
use base64::Engine as _;
use std::path::{Path, PathBuf};

/// ab's default for -t without -n (its man page: "-t ... implies -n 50000").
pub const TIMELIMIT_REQUESTS: u64 = 50_000;

/// ab's options webtune refuses, in ab's order, with what each does in ab.
pub const UNSUPPORTED: [(&str, &str); 12] = [
    ("-b", "TCP send/receive buffer size"),
    ("-B", "local address to bind to"),
    ("-P", "proxy authentication"),
    ("-X", "proxy server"),
    ("-w", "results in HTML tables"),
    ("-x", "HTML table attributes"),
    ("-y", "HTML tr attributes"),
    ("-z", "HTML td attributes"),
    (
        "-I",
        "turning TLS SNI off (webtune always sends it for a host name)",
    ),
    (
        "-Z",
        "TLS cipher suite (webtune offers rustls's TLS 1.2 and 1.3 suites)",
    ),
    ("-f", "TLS protocol (webtune offers TLS 1.2 and 1.3)"),
    ("-E", "TLS client certificate"),
];

/// The first of `UNSUPPORTED` given (`given[i]` says whether its i-th option was), as
/// "ab option -X (proxy server) is not supported by webtune ab".
pub fn refuse_unsupported(given: [bool; 12]) -> Result<(), OptionError> {
    match UNSUPPORTED.iter().zip(given).find(|(_, set)| *set) {
        Some(((flag, what), _)) => refuse(format!(
            "ab option {flag} ({what}) is not supported by webtune ab"
        )),
        None => Ok(()),
    }
}

/// ab's options that shape the run, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct AbOptions {
    /// [http://]hostname[:port]/path (ab accepts it without a scheme).
    pub url: Option<String>,
    /// -n
    pub requests: Option<u64>,
    /// -c
    pub concurrency: u32,
    /// -t, seconds
    pub timelimit: Option<f64>,
    /// -s, seconds
    pub timeout: f64,
    /// -k
    pub keepalive: bool,
    /// -H, "Name: value" each
    pub headers: Vec<String>,
    /// -C
    pub cookies: Vec<String>,
    /// -A user:password
    pub auth: Option<String>,
    /// -p
    pub postfile: Option<PathBuf>,
    /// -u
    pub putfile: Option<PathBuf>,
    /// -T
    pub content_type: String,
    /// -m
    pub method: Option<String>,
    /// -i
    pub head: bool,
}

impl AbOptions {
    /// The URL with a scheme: ab accepts "hostname:port/path".
    pub fn full_url(&self) -> Result<String, OptionError> {
        let Some(url) = &self.url else {
            return refuse("give a URL: [http://]hostname[:port]/path");
        };
        Ok(if url.contains("://") {
            url.clone()
        } else {
            format!("http://{url}")
        })
    }

    /// The run ab would make with these options, on `cores` threads at most. `read` reads
    /// the -p or -u file (its error is the whole message).
    pub fn to_spec(
        &self,
        cores: u32,
        read: impl FnOnce(&Path) -> Result<Vec<u8>, String>,
    ) -> Result<RunSpec, OptionError> {
        if self.concurrency == 0 {
            return refuse("-c must be at least 1");
        }
        let body_file = self.postfile.as_ref().or(self.putfile.as_ref());
        let body = match body_file {
            Some(path) => read(path).map_err(OptionError)?,
            None => Vec::new(),
        };
        let method = match (&self.method, self.head, &self.postfile, &self.putfile) {
            (Some(m), _, _, _) => m.clone(),
            (None, true, _, _) => "HEAD".into(),
            (None, false, Some(_), _) => "POST".into(),
            (None, false, None, Some(_)) => "PUT".into(),
            _ => "GET".into(),
        };
        let mut headers = Vec::new();
        for h in &self.headers {
            let Some((name, value)) = h.split_once(':') else {
                return refuse(format!("-H {h:?} has no ':' (use -H 'Name: value')"));
            };
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        if !self.cookies.is_empty() {
            headers.push(("Cookie".into(), self.cookies.join("; ")));
        }
        if let Some(auth) = &self.auth {
            headers.push((
                "Authorization".into(),
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(auth.as_bytes())
                ),
            ));
        }
        if body_file.is_some() {
            headers.push(("Content-Type".into(), self.content_type.clone()));
        }
        if !self.timeout.is_finite() || self.timeout <= 0.0 {
            return refuse("-s needs a positive number of seconds");
        }
        let stop = match (self.timelimit, self.requests) {
            (Some(t), _) if t.is_finite() && t > 0.0 => StopCondition::Duration { seconds: t },
            (Some(_), _) => return refuse("-t needs a positive number of seconds"),
            (None, Some(0)) => return refuse("-n must be at least 1"),
            (None, Some(n)) => StopCondition::Requests { count: n },
            (None, None) => StopCondition::Requests { count: 1 },
        };
        if let StopCondition::Requests { count } = stop {
            if count < self.concurrency as u64 {
                return refuse(format!("Cannot use concurrency level greater than total number of requests (ab's rule: -c {} > -n {count})", self.concurrency));
            }
        }
        Ok(RunSpec {
            url: self.full_url()?,
            method,
            headers,
            body_bytes: body.len() as u64,
            body,
            connections: self.concurrency,
            threads: cores.min(self.concurrency).max(1),
            stop,
            keepalive: self.keepalive,
            // ab speaks HTTP/1.0, with "Connection: Keep-Alive" under -k.
            http10: true,
            timeout_ms: (self.timeout * 1000.0) as u64,
            tls: unchecked_tls(),
            ..RunSpec::default()
        })
    }
}

/// What webtune does differently from ab with these options, one line each for stderr:
/// -t runs for its whole time (ab also stops at -n, or at 50,000 requests), and `-v 2`
/// (`verbosity`) shows one exchange made before the run.
pub fn differences(o: &AbOptions, verbosity: u32) -> Vec<String> {
    let mut lines = Vec::new();
    match (o.timelimit, o.requests) {
        (Some(_), Some(_)) => lines.push(
            "webtune ab: -t and -n together: running for -t seconds (ab would also stop at -n)"
                .to_string(),
        ),
        (Some(_), None) => lines.push(format!(
            "webtune ab: -t runs for the whole time limit (ab also stops at {TIMELIMIT_REQUESTS} requests)"
        )),
        _ => {}
    }
    if verbosity >= 2 {
        lines.push(
            "webtune ab: -v 2 shows one exchange, made before the run and not counted in it \
             (ab shows the head of every response)"
                .to_string(),
        );
    }
    lines
}

/// The requests ab counts its progress in: -n, or under -t ab's 50,000.
pub fn progress_requests(spec: &RunSpec) -> u64 {
    match spec.stop {
        StopCondition::Requests { count } => count,
        _ => TIMELIMIT_REQUESTS,
    }
}

/// `-v 2`: the request head and the response head (or why none came), in ab's words
/// ("INFO: GET header ==", "LOG: header received:").
pub fn exchange_text(method: &str, request: &[u8], response_head: Result<&[u8], &str>) -> String {
    let request = String::from_utf8_lossy(request);
    let head = request.split_once("\r\n\r\n").map_or(&*request, |(h, _)| h);
    let mut out = format!("INFO: {method} header == \n---\n{head}\r\n\r\n\n---\n");
    match response_head {
        Ok(bytes) => out.push_str(&format!(
            "LOG: header received:\n{}\n",
            String::from_utf8_lossy(bytes)
        )),
        Err(why) => out.push_str(&format!("LOG: no response: {why}\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> AbOptions {
        AbOptions {
            url: Some("127.0.0.1:8080/x".into()),
            requests: Some(10),
            concurrency: 2,
            timelimit: None,
            timeout: 30.0,
            keepalive: false,
            headers: vec![],
            cookies: vec![],
            auth: None,
            postfile: None,
            putfile: None,
            content_type: "text/plain".into(),
            method: None,
            head: false,
        }
    }

    fn no_file(_: &Path) -> Result<Vec<u8>, String> {
        Err("no file".into())
    }

    #[test]
    fn basic_auth_is_base64_of_user_and_password() {
        let o = AbOptions {
            auth: Some("user:pass".into()),
            ..options()
        };
        let spec = o.to_spec(4, no_file).unwrap();
        assert!(spec
            .headers
            .contains(&("Authorization".into(), "Basic dXNlcjpwYXNz".into())));
        assert_eq!(spec.url, "http://127.0.0.1:8080/x");
        assert_eq!((spec.threads, spec.http10), (2, true));
    }

    #[test]
    fn a_post_file_makes_a_post_with_its_content_type() {
        let o = AbOptions {
            postfile: Some("body.json".into()),
            content_type: "application/json".into(),
            ..options()
        };
        let spec = o.to_spec(1, |_| Ok(b"{}".to_vec())).unwrap();
        assert_eq!(spec.method, "POST");
        assert_eq!(spec.body_bytes, 2);
        assert!(spec
            .headers
            .contains(&("Content-Type".into(), "application/json".into())));
        let unread = o.to_spec(1, no_file).unwrap_err();
        assert_eq!(unread.to_string(), "no file");
    }

    #[test]
    fn abs_rules_are_refused_in_one_line() {
        let e = |o: AbOptions| o.to_spec(1, no_file).unwrap_err().to_string();
        assert!(e(AbOptions {
            concurrency: 0,
            ..options()
        })
        .contains("-c must be"));
        assert!(e(AbOptions {
            requests: Some(1),
            ..options()
        })
        .contains("ab's rule"));
        assert!(e(AbOptions {
            timeout: 0.0,
            ..options()
        })
        .contains("-s needs"));
        let mut given = [false; 12];
        assert!(refuse_unsupported(given).is_ok());
        given[3] = true;
        assert_eq!(
            refuse_unsupported(given).unwrap_err().to_string(),
            "ab option -X (proxy server) is not supported by webtune ab"
        );
    }

    #[test]
    fn a_time_limit_and_v2_are_told_apart_from_ab() {
        assert!(differences(&options(), 0).is_empty());
        let timed = AbOptions {
            timelimit: Some(5.0),
            requests: None,
            ..options()
        };
        let lines = differences(&timed, 2);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].contains("ab also stops at 50000 requests"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("webtune ab: -v 2 shows one exchange"));
    }

    #[test]
    fn the_exchange_is_shown_in_abs_words() {
        let text = exchange_text("GET", b"GET / HTTP/1.0\r\nHost: h\r\n\r\n", Err("refused"));
        assert!(
            text.starts_with("INFO: GET header == \n---\nGET / HTTP/1.0\r\nHost: h\r\n\r\n\n---\n")
        );
        assert!(text.ends_with("LOG: no response: refused\n"));
    }
}
