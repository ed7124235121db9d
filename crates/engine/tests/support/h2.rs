//! A scripted h2c server's side of a connection, for the engine's HTTP/2 tests: frames by
//! hand over a std socket, `:status 200` as one HPACK byte, just enough HTTP/2 to misbehave
//! in one way or to watch what the client sends.

use super::{serve_connections, TestServer};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const SETTINGS: u8 = 0x4;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const ENABLE_PUSH: u16 = 0x2;
pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const PROTOCOL_ERROR: u32 = 0x1;
/// HPACK: static table entry 8, `:status: 200`.
pub const STATUS_200: &[u8] = &[0x88];

pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// The server's side of one h2c connection.
pub struct H2Conn {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl H2Conn {
    /// Read the client's preface; None if the client went away first.
    pub fn accept(mut s: TcpStream) -> Option<H2Conn> {
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).ok()?;
        (preface == PREFACE).then_some(H2Conn { s, buf: Vec::new() })
    }

    pub fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend([kind, flags]);
        f.extend(stream.to_be_bytes());
        f.extend_from_slice(payload);
        let _ = self.s.write_all(&f);
    }

    pub fn settings(&mut self, pairs: &[(u16, u32)]) {
        let payload: Vec<u8> = pairs
            .iter()
            .flat_map(|&(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
            .collect();
        self.send(SETTINGS, 0, 0, &payload);
    }

    pub fn goaway(&mut self, last: u32, code: u32) {
        let payload = [last.to_be_bytes(), code.to_be_bytes()].concat();
        self.send(GOAWAY, 0, 0, &payload);
    }

    /// The whole frames read by one read (none if a read timeout passed first); None once
    /// the client closed.
    pub fn frames(&mut self) -> Option<Vec<Frame>> {
        let mut chunk = [0u8; 16384];
        match self.s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
            Err(_) => return None,
        }
        let mut out = Vec::new();
        while self.buf.len() >= 9 {
            let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
            if self.buf.len() < 9 + len {
                break;
            }
            let stream = u32::from_be_bytes(self.buf[5..9].try_into().unwrap()) & 0x7fff_ffff;
            out.push(Frame {
                kind: self.buf[3],
                flags: self.buf[4],
                stream,
                payload: self.buf[9..9 + len].to_vec(),
            });
            self.buf.drain(..9 + len);
        }
        Some(out)
    }

    /// Read until the client closes, noting the code of each GOAWAY it sends.
    pub fn drain(mut self, goaways: &Mutex<Vec<u32>>) {
        while let Some(frames) = self.frames() {
            for f in frames
                .iter()
                .filter(|f| f.kind == GOAWAY && f.payload.len() >= 8)
            {
                let code = u32::from_be_bytes(f.payload[4..8].try_into().unwrap());
                goaways.lock().unwrap().push(code);
            }
        }
    }
}

/// A server whose every h2c connection (after the client's preface) is `behave`d.
pub fn h2_server(behave: impl Fn(H2Conn) + Send + Sync + 'static) -> TestServer {
    serve_connections(move |s| {
        if let Some(conn) = H2Conn::accept(s) {
            behave(conn);
        }
    })
}
