//! The plan: a `RunSpec` checked and prepared for the hot path — the URL parsed, the host
//! resolved to every address it has, the request encoded once into bytes, the file-descriptor
//! limit checked (and the soft limit raised to the hard one when that is enough), and for
//! https:// the TLS settings (`tls::TlsTarget`).

use crate::rng::Rng;
use crate::scenario::{self, RequestDef, Think, WeightedPicker};
use crate::tls::TlsTarget;
use crate::{EngineError, Workload};
use std::net::{SocketAddr, ToSocketAddrs};
use webtune_model::RunSpec;

/// One kind of request the workers send: the plain URL's, or one name of a scenario.
#[derive(Debug, Clone)]
pub struct PlannedRequest {
    pub name: String,
    /// The whole request, encoded once, when nothing in it varies.
    pub fixed_bytes: Option<Vec<u8>>,
    /// The scenario definition to render per request when something varies.
    pub def: Option<RequestDef>,
    /// HEAD responses carry no body even when they announce a length.
    pub is_head: bool,
    pub expect_status: Vec<(u16, u16)>,
    /// The response body must contain this (scenario `body_contains`).
    pub body_contains: Option<Vec<u8>>,
}

/// Everything the workers need, computed once before the run.
#[derive(Debug)]
pub struct RunPlan {
    /// Connections are spread over these round-robin (seed 004 served on ten addresses).
    pub addresses: Vec<SocketAddr>,
    pub requests: Vec<PlannedRequest>,
    /// Picks a request by weight (scenarios); None means always request 0.
    pub picker: Option<WeightedPicker>,
    /// Closed loop: pause per connection between an answer and its next request.
    pub think: Think,
    /// True for scenario runs: results are broken down per request name.
    pub named: bool,
    pub host_header: String,
    /// Resolved addresses left out because they refused a test connection while others
    /// accepted (`localhost` is ::1 and 127.0.0.1; most servers listen on one of them).
    pub skipped: Vec<SocketAddr>,
    /// The probe's target and request, if `--probe` was given.
    pub probe: Option<(Vec<SocketAddr>, Vec<u8>)>,
    pub threads: usize,
    pub connections: usize,
    /// https:// targets: the TLS settings every connection shares.
    pub tls: Option<TlsTarget>,
    /// The probe's, when its URL is https://.
    pub probe_tls: Option<TlsTarget>,
    /// Scenarios with `[[journey]]`: the journeys' run-wide plan (each connection is a
    /// virtual user walking one of them).
    pub journeys: Option<std::sync::Arc<crate::journey::JourneyRun>>,
}

/// ALPN for HTTP/1.1 over TLS.
const ALPN_HTTP1: &[&[u8]] = &[b"http/1.1"];
/// ALPN for `--http2` over TLS: h2 only (a server that does not agree fails the handshake's
/// check, `h2_not_negotiated`, rather than silently measuring HTTP/1.1).
const ALPN_H2: &[&[u8]] = &[b"h2"];
/// ALPN for `--http3`: h3 only (QUIC requires ALPN; a server without it refuses the
/// handshake, `quic_handshake`).
const ALPN_H3: &[&[u8]] = &[b"h3"];

/// The parts of an http:// URL the engine needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// Path and query, starting with '/'.
    pub path: String,
    /// The Host header value: host, plus ":port" when it is not the scheme's default.
    pub host_header: String,
    /// https://
    pub tls: bool,
}

/// Parse and check an http:// or https:// URL.
pub fn parse_url(text: &str) -> Result<Endpoint, EngineError> {
    let parsed = url::Url::parse(text).map_err(|e| EngineError::BadUrl {
        url: text.to_string(),
        reason: e.to_string(),
    })?;
    let tls = match parsed.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(EngineError::UnsupportedScheme {
                scheme: other.to_string(),
            })
        }
    };
    let host = match parsed.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => {
            return Err(EngineError::BadUrl {
                url: text.to_string(),
                reason: "no host".into(),
            })
        }
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    let mut path = parsed.path().to_string();
    if path.is_empty() {
        path.push('/');
    }
    if let Some(q) = parsed.query() {
        path.push('?');
        path.push_str(q);
    }
    let host_literal = match parsed.host() {
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        _ => host.clone(),
    };
    let host_header = if port == if tls { 443 } else { 80 } {
        host_literal
    } else {
        format!("{host_literal}:{port}")
    };
    Ok(Endpoint {
        host,
        port,
        path,
        host_header,
        tls,
    })
}

/// Parse an smtp://HOST[:PORT] target (port 25 by default).
pub fn parse_smtp_url(text: &str) -> Result<Endpoint, EngineError> {
    let bad = |reason: &str| EngineError::BadSmtpTarget {
        target: text.trim_start_matches("smtp://").to_string(),
        reason: reason.to_string(),
    };
    let rest = text
        .strip_prefix("smtp://")
        .ok_or_else(|| bad("not smtp://"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') || h.starts_with('[') => {
            (h, p.parse::<u16>().map_err(|_| bad("bad port"))?)
        }
        _ => (rest, 25),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.contains('/') || host.contains('@') {
        return Err(bad("no host"));
    }
    Ok(Endpoint {
        host: host.to_string(),
        port,
        path: String::new(),
        host_header: host.to_string(),
        tls: false,
    })
}

/// Every address the host resolves to, or the `--connect-to` list.
pub fn resolve(target: &Endpoint, connect_to: &[String]) -> Result<Vec<SocketAddr>, EngineError> {
    if !connect_to.is_empty() {
        return connect_to
            .iter()
            .map(|a| {
                a.trim()
                    .parse::<SocketAddr>()
                    .map_err(|_| EngineError::BadConnectTo { addr: a.clone() })
            })
            .collect();
    }
    let mut addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: target.host.clone(),
            reason: e.to_string(),
        })?
        .collect();
    addrs.dedup();
    if addrs.is_empty() {
        return Err(EngineError::Resolve {
            host: target.host.clone(),
            reason: "no addresses".into(),
        });
    }
    Ok(addrs)
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Encode the request once; the workers send these bytes as they are.
pub fn encode_request(spec: &RunSpec, target: &Endpoint) -> Result<Vec<u8>, EngineError> {
    if !is_token(&spec.method) {
        return Err(EngineError::BadMethod {
            method: spec.method.clone(),
        });
    }
    for (name, value) in &spec.headers {
        if !is_token(name) {
            return Err(EngineError::BadHeader {
                header: format!("{name}: {value}"),
                reason: "the name must be a token (letters, digits, '-')".into(),
            });
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(EngineError::BadHeader {
                header: name.clone(),
                reason: "the value must not contain CR, LF or NUL".into(),
            });
        }
    }
    let has = |n: &str| spec.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let version = if spec.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let mut head = format!("{} {} {}\r\n", spec.method, target.path, version);
    if !has("host") {
        head.push_str(&format!("Host: {}\r\n", target.host_header));
    }
    if !has("user-agent") {
        head.push_str(concat!(
            "User-Agent: webtune/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    if !has("accept") {
        head.push_str("Accept: */*\r\n");
    }
    if !has("connection") {
        // HTTP/1.0 closes after the response unless asked not to (RFC 1945): ab and
        // http_load send no Connection header there, and neither does webtune (issue 39:
        // 17 bytes a request more than ab under `webtune ab -p`).
        match (spec.keepalive, spec.http10) {
            (false, true) => {}
            (false, false) => head.push_str("Connection: close\r\n"),
            (true, true) => head.push_str("Connection: keep-alive\r\n"),
            (true, false) => {}
        }
    }
    if !spec.body.is_empty() && !has("content-length") {
        head.push_str(&format!("Content-Length: {}\r\n", spec.body.len()));
    }
    for (name, value) in &spec.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&spec.body);
    Ok(bytes)
}

/// Of several resolved addresses, keep those that accept a test connection; if none does,
/// keep them all (the run then reports the connect errors).
fn keep_listening(
    addrs: Vec<SocketAddr>,
    connect_timeout_ms: u64,
) -> (Vec<SocketAddr>, Vec<SocketAddr>) {
    if addrs.len() < 2 {
        return (addrs, Vec::new());
    }
    let timeout = std::time::Duration::from_millis(connect_timeout_ms.clamp(1, 1000));
    let (up, down): (Vec<SocketAddr>, Vec<SocketAddr>) = addrs
        .iter()
        .partition(|a| std::net::TcpStream::connect_timeout(a, timeout).is_ok());
    if up.is_empty() {
        (addrs, Vec::new())
    } else {
        (up, down)
    }
}

/// Open files one connection-per-socket run needs: the sockets plus the process's own
/// (stdio, epoll fds, the binary, libraries) with headroom.
fn files_needed(connections: u64, threads: u64) -> u64 {
    connections + threads * 2 + 64
}

/// Make sure this process may open `needed` files: raise the soft limit up to the hard one
/// if that suffices (our own process only; nothing on the system changes), else refuse,
/// naming the hard limit when it is the obstacle (only root can raise that). `extra` of
/// the `connections` are the run's own (the probe's), not the user's `-c`.
fn ensure_file_limit(connections: u64, extra: u64, threads: u64) -> Result<(), EngineError> {
    let needed = files_needed(connections, threads);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass; no other memory is touched.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // cannot tell: let the connects report what happens
    }
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max >= needed {
        let raised = libc::rlimit {
            rlim_cur: needed,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    if lim.rlim_max < needed {
        return Err(EngineError::HardFileLimit {
            connections: connections.saturating_sub(extra),
            needed,
            hard: lim.rlim_max,
            most: lim.rlim_max.saturating_sub(needed - connections + extra),
        });
    }
    Err(EngineError::FileLimit {
        connections: connections.saturating_sub(extra),
        needed,
        limit: lim.rlim_cur,
    })
}

/// Check a spec and prepare everything the workers need.
pub fn build(spec: &RunSpec, workload: &Workload) -> Result<RunPlan, EngineError> {
    // The spec's own checks (zero counts, lengths, timeouts; warm-up and cool-down) come
    // first, before anything is resolved or connected.
    spec.validate()?;
    let target = match spec.smtp {
        Some(_) => parse_smtp_url(&spec.url)?,
        None => parse_url(&spec.url)?,
    };
    let resolved = resolve(&target, &spec.connect_to)?;
    let (addresses, skipped) = if spec.connect_to.is_empty() {
        keep_listening(resolved, spec.connect_timeout_ms)
    } else {
        (resolved, Vec::new()) // the user named them: use them all, as asked
    };
    let journeys_of = workload.scenario().filter(|sc| !sc.journeys.is_empty());
    if journeys_of.is_some() {
        refuse_for_journeys(spec)?;
    } else if spec.count_journeys {
        return Err(EngineError::BadLoad(
            "--count journeys needs a scenario with [[journey]] tables (docs/scenarios.md)".into(),
        ));
    }
    let (requests, picker, think, named) = match workload.scenario() {
        // Journeys: each step a planned request (named, rendered per request: a step's
        // values and cookies vary), the journeys' steps one after the other.
        Some(sc) if !sc.journeys.is_empty() => {
            let requests = sc
                .journeys
                .iter()
                .flat_map(|j| &j.steps)
                .map(|step| PlannedRequest {
                    name: step.request.name.clone(),
                    fixed_bytes: None,
                    def: Some(step.request.clone()),
                    is_head: step.request.method.eq_ignore_ascii_case("HEAD"),
                    expect_status: step.request.expect_status.clone(),
                    body_contains: step.request.body_contains.clone(),
                })
                .collect::<Vec<_>>();
            (requests, None, sc.think, true)
        }
        // SMTP: one kind of "request", a message; the SMTP setup makes each one.
        None if spec.smtp.is_some() => {
            let message = PlannedRequest {
                name: "message".into(),
                fixed_bytes: None,
                def: None,
                is_head: false,
                expect_status: vec![(200, 299)],
                body_contains: None,
            };
            (vec![message], None, Think::None, false)
        }
        None => {
            let request = PlannedRequest {
                name: "request".into(),
                fixed_bytes: Some(encode_request(spec, &target)?),
                def: None,
                is_head: spec.method.eq_ignore_ascii_case("HEAD"),
                expect_status: spec.expect_status.clone(),
                body_contains: None,
            };
            (vec![request], None, Think::None, false)
        }
        Some(sc) => {
            let mut rng = Rng::seeded(0);
            let requests = sc
                .requests
                .iter()
                .map(|def| {
                    let fixed = def.path.is_static()
                        && def.body.is_static()
                        && def.headers.iter().all(|(_, v)| v.is_static());
                    let fixed_bytes = fixed.then(|| {
                        let mut out = Vec::new();
                        scenario::encode_into(
                            def,
                            &target.host_header,
                            spec.keepalive,
                            spec.http10,
                            &mut rng,
                            0,
                            &mut out,
                        );
                        out
                    });
                    PlannedRequest {
                        name: def.name.clone(),
                        fixed_bytes,
                        def: (!fixed).then(|| def.clone()),
                        is_head: def.method.eq_ignore_ascii_case("HEAD"),
                        expect_status: def.expect_status.clone(),
                        body_contains: def.body_contains.clone(),
                    }
                })
                .collect::<Vec<_>>();
            let weights: Vec<u32> = sc.requests.iter().map(|d| d.weight).collect();
            (
                requests,
                Some(WeightedPicker::new(&weights)),
                sc.think,
                true,
            )
        }
    };
    let tls = match target.tls {
        true => Some(TlsTarget::new(
            &spec.tls,
            &target.host,
            match (spec.http2, spec.http3) {
                (_, true) => ALPN_H3,
                (true, false) => ALPN_H2,
                (false, false) => ALPN_HTTP1,
            },
        )?),
        false => None,
    };
    let mut probe_tls = None;
    let probe = match &spec.probe {
        None => None,
        Some(p) => {
            let t = parse_url(&p.url)?;
            if t.tls {
                probe_tls = Some(TlsTarget::new(&spec.tls, &t.host, ALPN_HTTP1)?);
            }
            let probe_spec = RunSpec {
                url: p.url.clone(),
                keepalive: true,
                ..RunSpec::default()
            };
            Some((resolve(&t, &[])?, encode_request(&probe_spec, &t)?))
        }
    };
    let connections = spec.connections as usize;
    if connections >= 1 << 24 {
        return Err(EngineError::BadLoad(format!(
            "-c {connections} is more connections than one run can track (16,777,215 at most)"
        )));
    }
    let threads = (spec.threads as usize).min(connections).max(1);
    ensure_file_limit(connections as u64 + 1, 1, threads as u64)?;
    let journeys = match journeys_of {
        None => None,
        Some(sc) => {
            let mut first = Vec::with_capacity(sc.journeys.len());
            let mut at = 0;
            for j in &sc.journeys {
                first.push(at);
                at += j.steps.len();
            }
            let run = crate::journey::JourneyRun::new(
                sc,
                first,
                connections,
                &target.host,
                target.tls,
                spec.is_open_loop(),
                spec.count_journeys,
            )
            .map_err(EngineError::BadLoad)?;
            Some(std::sync::Arc::new(run))
        }
    };
    Ok(RunPlan {
        addresses,
        requests,
        picker,
        think,
        named,
        host_header: target.host_header,
        skipped,
        probe,
        threads,
        connections,
        tls,
        probe_tls,
        journeys,
    })
}

/// Journeys run on the HTTP/1.x worker: each connection a virtual user (closed loop) or
/// one arrival's user at a time (open loop). `--count journeys` needs journeys.
fn refuse_for_journeys(spec: &RunSpec) -> Result<(), EngineError> {
    let refuse = |what: &str| {
        Err(EngineError::BadLoad(format!(
            "the scenario has journeys, which run over HTTP/1.x; {what} is not supported with journeys (docs/scenarios.md)"
        )))
    };
    if spec.http2 {
        return refuse("--http2");
    }
    if spec.http3 {
        return refuse("--http3");
    }
    if spec.smtp.is_some() {
        return refuse("smtp");
    }
    Ok(())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
