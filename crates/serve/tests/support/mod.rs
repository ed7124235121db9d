//! A small HTTP/1.x client over std's TcpStream for the embedded server's tests: sends raw
//! requests and reads responses (Content-Length, chunked, or no body for HEAD) off one
//! connection, so keep-alive and closing can be observed directly.

#![allow(dead_code)] // each test file uses a different part of it

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use webtune_serve::{EmbeddedServer, ServeOptions};

/// Generous: a read that waits this long means the server did not answer at all.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A server on a free loopback port with few threads, as tests want it.
pub fn start_server(adjust: impl FnOnce(&mut ServeOptions)) -> EmbeddedServer {
    let mut opts = ServeOptions {
        workers: 2,
        ..ServeOptions::default()
    };
    adjust(&mut opts);
    EmbeddedServer::start(opts).expect("the embedded server starts on a free loopback port")
}

#[derive(Debug)]
pub struct Response {
    pub version: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Number of chunks when the body was chunked, else 0.
    pub chunks: usize,
}

impl Response {
    /// The first value of a header (name compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Client {
    stream: TcpStream,
    /// Bytes read but not consumed yet.
    pending: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect to the embedded server");
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        Client {
            stream,
            pending: Vec::new(),
        }
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    pub fn send(&mut self, raw: &str) {
        self.stream
            .write_all(raw.as_bytes())
            .expect("send a request");
    }

    /// Sends `METHOD PATH HTTP/1.1` and reads the answer.
    pub fn request(&mut self, method: &str, path: &str) -> Response {
        self.send(&format!("{method} {path} HTTP/1.1\r\nHost: test\r\n\r\n"));
        self.read_response(method == "HEAD")
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn get(&mut self, path: &str) -> Response {
        self.request("GET", path)
    }

    /// Reads one response; `no_body` for answers to HEAD.
    pub fn read_response(&mut self, no_body: bool) -> io::Result<Response> {
        let head_end = loop {
            if let Some(at) = find(&self.pending, b"\r\n\r\n") {
                break at;
            }
            self.fill()?;
        };
        let head = String::from_utf8(self.pending[..head_end].to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "head is not UTF-8"))?;
        self.pending.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default().to_string();
        let status = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(&format!("bad status line {status_line:?}")))?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut response = Response {
            version,
            status,
            headers,
            body: Vec::new(),
            chunks: 0,
        };
        if no_body || status == 204 || status == 304 {
            return Ok(response);
        }
        if let Some(len) = response.header("content-length") {
            let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
            response.body = self.take(len)?;
        } else if response
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        {
            loop {
                let line = self.take_line()?;
                let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| bad(&format!("bad chunk size line {line:?}")))?;
                if size == 0 {
                    while !self.take_line()?.is_empty() {} // trailers
                    break;
                }
                response.body.extend(self.take(size)?);
                response.chunks += 1;
                if !self.take_line()?.is_empty() {
                    return Err(bad("chunk not followed by CRLF"));
                }
            }
        } else {
            // Delimited by close.
            loop {
                match self.fill() {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
            }
            response.body = std::mem::take(&mut self.pending);
        }
        Ok(response)
    }

    /// Waits (up to PATIENCE) for the server to close the connection; true when it did
    /// (end of stream or reset), false when data arrived instead.
    pub fn server_closes(&mut self) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        let mut buf = [0u8; 64];
        match self.stream.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
            ),
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 64 * 1024];
        let n = self.stream.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            ));
        }
        self.pending.extend_from_slice(&buf[..n]);
        Ok(())
    }

    fn take(&mut self, len: usize) -> io::Result<Vec<u8>> {
        while self.pending.len() < len {
            self.fill()?;
        }
        Ok(self.pending.drain(..len).collect())
    }

    fn take_line(&mut self) -> io::Result<String> {
        let end = loop {
            if let Some(at) = find(&self.pending, b"\r\n") {
                break at;
            }
            self.fill()?;
        };
        let line = String::from_utf8_lossy(&self.pending[..end]).into_owned();
        self.pending.drain(..end + 2);
        Ok(line)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}
