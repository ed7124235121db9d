//! TLS in the lab: the self-signed certificate made per lab directory (with the openssl
//! CLI) and an HTTPS GET for readiness checks (through the engine's own transport). The
//! TLS variants of the stacks are `stacks::TlsStack`; the file names and protocol sets
//! every front server uses are the servers' shared vocabulary (`vocab`, re-exported here),
//! and each server's TLS parameters and directives are its own, in `servers`.

use crate::LabError;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webtune_engine::tls::TlsTarget;
use webtune_engine::transport::Transport;
use webtune_model::TlsOptions;

pub use crate::vocab::{CERT_FILE, KEY_FILE};

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
