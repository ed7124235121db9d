//! TLS in the lab: the TLS variants of the stacks (nginx with `ssl` and `http2`, Apache
//! event with mod_ssl and mod_http2, nginx → Apache event with TLS at the front), their TLS
//! parameters and how those render into each server's directives, the self-signed
//! certificate made per lab directory (with the openssl CLI), and an HTTPS GET for
//! readiness checks (through the engine's own transport).

use crate::params::{ParamKind, ParamSpec, Settings, Value};
use crate::stacks::{Component, Mpm, StackKind};
use crate::LabError;
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webtune_engine::tls::TlsTarget;
use webtune_engine::transport::Transport;
use webtune_model::TlsOptions;

/// A stack with TLS at its front server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsStack {
    /// nginx serving static files over TLS (and HTTP/2 when `http2=on`).
    Nginx,
    /// Apache event with mod_ssl (and mod_http2 when `Protocols_h2=on`), PHP via php-fpm.
    ApacheEvent,
    /// nginx terminating TLS, proxying plain HTTP to Apache event + php-fpm.
    NginxApacheEvent,
}

impl TlsStack {
    pub const ALL: [TlsStack; 3] = [
        TlsStack::Nginx,
        TlsStack::ApacheEvent,
        TlsStack::NginxApacheEvent,
    ];

    /// The same stack without TLS (its servers, start order and parameters).
    pub fn plain(self) -> StackKind {
        match self {
            TlsStack::Nginx => StackKind::Nginx,
            TlsStack::ApacheEvent => StackKind::Apache(Mpm::Event),
            TlsStack::NginxApacheEvent => StackKind::NginxApache(Mpm::Event),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsStack::Nginx => "nginx-tls",
            TlsStack::ApacheEvent => "apache-event-tls",
            TlsStack::NginxApacheEvent => "nginx-apache-event-tls",
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            TlsStack::Nginx => "nginx with ssl (+http2) serving static files; self-signed cert",
            TlsStack::ApacheEvent => {
                "Apache event with mod_ssl (+mod_http2), /cpu/US via php-fpm; self-signed cert"
            }
            TlsStack::NginxApacheEvent => {
                "nginx terminating TLS, proxying to Apache event + php-fpm; frontend.*, backend.*"
            }
        }
    }
}

/// The file names of the certificate and key inside the stack's private directory.
pub const CERT_FILE: &str = "cert.pem";
pub const KEY_FILE: &str = "key.pem";

fn int(name: &str, min: i64, max: i64, default: i64, directive: &'static str) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Int {
            min,
            max,
            keyword: None,
        },
        default: Value::Int(default),
        directive,
        meaning: "",
    }
}

fn with_meaning(mut p: ParamSpec, meaning: &'static str) -> ParamSpec {
    p.meaning = meaning;
    p
}

fn switch(name: &str, default: bool, directive: &'static str, meaning: &'static str) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Switch,
        default: Value::Switch(default),
        directive,
        meaning,
    }
}

fn choice(
    name: &str,
    words: &'static [&'static str],
    default: &'static str,
    directive: &'static str,
    meaning: &'static str,
) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Choice(words),
        default: Value::Word(default),
        directive,
        meaning,
    }
}

/// Protocol sets offered: both, or one of them.
const PROTOCOLS: &[&str] = &["TLSv1.2+TLSv1.3", "TLSv1.3", "TLSv1.2"];

/// The TLS parameters of the front server (names without prefix). Defaults are Debian 12's
/// (mods-available/ssl.conf: a ~500 KiB session cache) or the server's own where Debian sets
/// none (nginx: no session cache, tickets on), except the protocols: TLS 1.2 and 1.3, what
/// webtune speaks (Debian also lists 1.0 and 1.1).
pub fn parameters(front: Component) -> Vec<ParamSpec> {
    match front {
        Component::Nginx(_) => vec![
            with_meaning(
                int(
                    "ssl_session_cache",
                    0,
                    1024,
                    0,
                    "ssl_session_cache shared:SSL:Nm",
                ),
                "MB of shared session cache (0: nginx's default `none`: ids do not resume)",
            ),
            switch(
                "ssl_session_tickets",
                true,
                "ssl_session_tickets",
                "resume sessions from tickets the client keeps",
            ),
            choice(
                "ssl_protocols",
                PROTOCOLS,
                "TLSv1.2+TLSv1.3",
                "ssl_protocols",
                "TLS versions offered",
            ),
            switch("http2", false, "listen … http2", "offer HTTP/2 by ALPN"),
            with_meaning(
                int(
                    "http2_max_concurrent_streams",
                    1,
                    100_000,
                    128,
                    "http2_max_concurrent_streams",
                ),
                "streams one HTTP/2 connection may have open at once",
            ),
        ],
        Component::Apache(_) => vec![
            with_meaning(
                int(
                    "SSLSessionCache",
                    0,
                    1_048_576,
                    500,
                    "SSLSessionCache shmcb:…(N KiB)",
                ),
                "KiB of shared session cache (Debian's ssl.conf: ~500; 0: none)",
            ),
            switch(
                "SSLSessionTickets",
                true,
                "SSLSessionTickets",
                "resume sessions from tickets the client keeps",
            ),
            choice(
                "SSLProtocol",
                PROTOCOLS,
                "TLSv1.2+TLSv1.3",
                "SSLProtocol",
                "TLS versions offered",
            ),
            switch(
                "Protocols_h2",
                false,
                "Protocols h2 http/1.1",
                "offer HTTP/2 by ALPN (mod_http2)",
            ),
            with_meaning(
                int(
                    "H2MaxSessionStreams",
                    1,
                    100_000,
                    100,
                    "H2MaxSessionStreams",
                ),
                "streams one HTTP/2 connection may have open at once",
            ),
        ],
        Component::PhpFpm => Vec::new(),
    }
}

/// Template variables for the front server of a TLS stack (empty for every other server,
/// so the templates render the same with TLS off). `prefix` is the front's parameter prefix.
pub fn template_vars(
    tls: bool,
    component: Component,
    prefix: &str,
    settings: &Settings,
    dir: &str,
    modules: &str,
) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = ["tls_listen", "tls", "tls_modules"]
        .into_iter()
        .map(|k| (k.to_string(), String::new()))
        .collect();
    if !tls {
        return vars;
    }
    let get = |name: &str| settings.get(&format!("{prefix}{name}"));
    let int_of = |name: &str| get(name).and_then(|v| v.as_int()).unwrap_or(0);
    let on = |name: &str| get(name).and_then(|v| v.as_switch()).unwrap_or(false);
    let protocols = |name: &str| match get(name) {
        Some(Value::Word(w)) => w.replace('+', " "),
        _ => "TLSv1.2 TLSv1.3".to_string(),
    };
    match component {
        Component::Nginx(_) => {
            let h2 = if on("http2") { " http2" } else { "" };
            vars.insert("tls_listen".into(), format!(" ssl{h2}"));
            let cache = match int_of("ssl_session_cache") {
                0 => "none".to_string(),
                mb => format!("shared:SSL:{mb}m"),
            };
            vars.insert(
                "tls".into(),
                format!(
                    "        ssl_certificate {dir}/{CERT_FILE};\n\
                     \x20       ssl_certificate_key {dir}/{KEY_FILE};\n\
                     \x20       ssl_protocols {};\n\
                     \x20       ssl_session_cache {cache};\n\
                     \x20       ssl_session_tickets {};\n\
                     \x20       http2_max_concurrent_streams {};\n",
                    protocols("ssl_protocols"),
                    if on("ssl_session_tickets") {
                        "on"
                    } else {
                        "off"
                    },
                    int_of("http2_max_concurrent_streams"),
                ),
            );
        }
        Component::Apache(_) => {
            let mut loads = format!(
                "LoadModule socache_shmcb_module {modules}/mod_socache_shmcb.so\n\
                 LoadModule ssl_module {modules}/mod_ssl.so"
            );
            if on("Protocols_h2") {
                loads.push_str(&format!("\nLoadModule http2_module {modules}/mod_http2.so"));
            }
            vars.insert("tls_modules".into(), loads);
            let cache = match int_of("SSLSessionCache") {
                0 => "none".to_string(),
                kib => format!("shmcb:{dir}/run/ssl_scache({})", kib * 1024),
            };
            let mut block = format!(
                "SSLEngine on\nSSLCertificateFile {dir}/{CERT_FILE}\n\
                 SSLCertificateKeyFile {dir}/{KEY_FILE}\nSSLProtocol -all {}\n\
                 SSLSessionCache {cache}\nSSLSessionTickets {}\n",
                protocols("SSLProtocol")
                    .split(' ')
                    .map(|p| format!("+{p}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                if on("SSLSessionTickets") { "on" } else { "off" },
            );
            if on("Protocols_h2") {
                block.push_str(&format!(
                    "Protocols h2 http/1.1\nH2MaxSessionStreams {}\n",
                    int_of("H2MaxSessionStreams")
                ));
            }
            vars.insert("tls".into(), block);
        }
        Component::PhpFpm => {}
    }
    vars
}

/// Make a self-signed P-256 certificate for localhost and 127.0.0.1 in `dir` (LAB-NOTES
/// "TLS"): `cert.pem` (0644) and `key.pem` (0600).
pub fn make_certificate(dir: &Path) -> Result<PathBuf, LabError> {
    let cert = dir.join(CERT_FILE);
    let key = dir.join(KEY_FILE);
    let output = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:P-256")
        .args(["-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        // A leaf, not a CA: Apache warns about a CA certificate used by a server.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| LabError::io("cannot run openssl to make the lab's certificate", e))?;
    if !output.status.success() {
        return Err(LabError::StartFailed {
            server: "openssl".into(),
            message: format!(
                "making the certificate failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    use std::os::unix::fs::PermissionsExt;
    for (path, mode) in [(&cert, 0o644), (&key, 0o600)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| LabError::io(format!("cannot chmod {}", path.display()), e))?;
    }
    Ok(cert)
}

/// `GET path` over HTTPS (any certificate accepted): the status and body, like `http_get`.
pub fn https_get(address: SocketAddr, path: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let target = TlsTarget::new(&insecure, &address.ip().to_string(), &[b"http/1.1"])
        .map_err(|e| io::Error::other(e.to_string()))?;
    let session = target
        .connector()
        .map_err(|e| io::Error::other(e.to_string()))?
        .connection()
        .map_err(|e| io::Error::other(e.to_string()))?;
    let stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut t = Transport::tls(stream, session, false);
    if !t.handshake()? {
        return Err(io::ErrorKind::TimedOut.into());
    }
    let bytes =
        format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: webtune-lab\r\n\r\n");
    let mut request = bytes.as_bytes();
    while !request.is_empty() {
        let n = t.write(request)?;
        request = &request[n..];
    }
    if !t.flush()? {
        return Err(io::ErrorKind::TimedOut.into());
    }
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match t.read(&mut buf)? {
            0 => break,
            n => raw.extend_from_slice(&buf[..n]),
        }
        if raw.len() > 64 * 1024 * 1024 {
            break;
        }
    }
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "not an HTTP response");
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let status: u16 = String::from_utf8_lossy(&raw[..head_end])
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let mut body = Vec::new();
    (&raw[head_end + 4..]).read_to_end(&mut body)?;
    Ok((status, body))
}
