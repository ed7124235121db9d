//! One exchange shown as it went over the wire (`ab -v 2`): the exact request bytes a run of
//! `spec` sends, and the response head the server answers, over one blocking connection of
//! its own, apart from any run (it is not counted in a result).

use crate::plan::{encode_request, parse_url, resolve};
use crate::tls::{self, TlsTarget};
use crate::transport::Transport;
use crate::EngineError;
use std::io;
use std::net::TcpStream;
use std::time::Duration;
use webtune_model::RunSpec;

/// Most bytes of a response head read before giving up on its end.
const MAX_HEAD: usize = 64 * 1024;

/// What one request and its answer looked like.
#[derive(Debug)]
pub struct Exchange {
    /// The request, as the workers send it (head and body).
    pub request: Vec<u8>,
    /// The response's status line and headers up to the blank line that ends them (all
    /// that came, when the server closed first), or why nothing came.
    pub response_head: Result<Vec<u8>, String>,
}

/// Send `spec`'s request once and read the response head. Errors are the spec's own (a bad
/// URL or header); a failed connect or read is in `response_head`.
pub fn exchange_once(spec: &RunSpec) -> Result<Exchange, EngineError> {
    let target = parse_url(&spec.url)?;
    let request = encode_request(spec, &target)?;
    let addrs = resolve(&target, &spec.connect_to)?;
    let tls = match target.tls {
        true => Some(TlsTarget::new(&spec.tls, &target.host, &[b"http/1.1"])?.connector()?),
        false => None,
    };
    let timeout = Duration::from_millis(spec.timeout_ms.max(1));
    let connect_timeout = Duration::from_millis(spec.connect_timeout_ms.max(1));
    let response_head = (|| -> io::Result<Vec<u8>> {
        let addr = addrs
            .first()
            .ok_or_else(|| io::Error::other("the host has no address"))?;
        let sock = TcpStream::connect_timeout(addr, connect_timeout)?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        let mut conn = match &tls {
            None => Transport::Tcp(sock),
            Some(c) => Transport::tls(sock, c.connection().map_err(io::Error::other)?, false),
        };
        if !conn.handshake()? {
            return Err(io::Error::other("TLS handshake timed out"));
        }
        let mut sent = 0;
        while sent < request.len() {
            match conn.write(&request[sent..])? {
                0 => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                n => sent += n,
            }
            conn.flush()?;
        }
        while !conn.flush()? {}
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                head.truncate(end + 4);
                return Ok(head);
            }
            if head.len() > MAX_HEAD {
                return Ok(head);
            }
            match conn.read(&mut buf)? {
                0 => return Ok(head),
                n => head.extend_from_slice(&buf[..n]),
            }
        }
    })()
    .map_err(|e| match tls::failure_kind(&e) {
        Some(kind) => format!("{} ({e})", kind.describe()),
        None => e.to_string(),
    });
    Ok(Exchange {
        request,
        response_head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn shows_the_request_sent_and_the_head_answered() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.0 200 OK\r\nX-A: b\r\n\r\nbody")
                .unwrap();
            buf[..n].to_vec()
        });
        let spec = RunSpec {
            url: format!("http://{addr}/x"),
            http10: true,
            ..RunSpec::default()
        };
        let shown = exchange_once(&spec).unwrap();
        let received = server.join().unwrap();
        assert_eq!(shown.request, received);
        assert!(shown.request.starts_with(b"GET /x HTTP/1.0\r\n"));
        assert_eq!(
            shown.response_head.unwrap(),
            b"HTTP/1.0 200 OK\r\nX-A: b\r\n\r\n".to_vec()
        );
    }
}
