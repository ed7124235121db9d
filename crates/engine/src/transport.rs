//! The transport seam: a connection that is plain TCP or TLS (rustls over the same socket),
//! with `handshake`, `write`, `flush`, `read` — so the HTTP codec above does not care which.
//! Generic over the socket: the workers use mio's non-blocking streams, the probe std's
//! blocking ones.
//!
//! Plain TCP is the socket itself: one `write` and one `read` per request, nothing added.
//! Under TLS a short *plaintext* read does not mean the socket is drained (a record may
//! hold part of what arrived, or more may be buffered in rustls), so the worker reads
//! until `WouldBlock`. The transport keeps the cost down: it remembers whether its last
//! *socket* read came back short — that fact still holds for the socket — and then answers
//! `WouldBlock` itself instead of spending a syscall to learn it (non-blocking mode only).

use crate::tls;
use rustls::client::ClientConnection;
use rustls::HandshakeKind;
use std::io::{self, Read, Write};
use webtune_model::ErrorKind;

/// A connection's byte stream, plain or TLS.
pub enum Transport<S> {
    Tcp(S),
    Tls(Box<TlsStream<S>>),
}

/// rustls over a socket.
pub struct TlsStream<S> {
    sock: S,
    conn: ClientConnection,
    /// Non-blocking, edge-triggered use: a short socket read means drained.
    edge_triggered: bool,
    /// The last socket read returned fewer bytes than asked (edge-triggered mode only).
    drained: bool,
    /// The socket reported end of file.
    eof: bool,
}

/// What a finished handshake agreed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeInfo {
    pub resumed: bool,
    pub version: Option<String>,
    pub cipher: Option<String>,
    pub alpn: Option<String>,
}

/// A socket reader that notes whether a read came back short.
struct Noting<'a, S> {
    sock: &'a mut S,
    short: bool,
}

impl<S: Read> Read for Noting<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl<S: Read + Write> Transport<S> {
    /// TLS over `sock`; `edge_triggered` for non-blocking sockets under edge-triggered epoll.
    pub fn tls(sock: S, conn: ClientConnection, edge_triggered: bool) -> Transport<S> {
        Transport::Tls(Box::new(TlsStream {
            sock,
            conn,
            edge_triggered,
            drained: false,
            eof: false,
        }))
    }

    pub fn socket(&self) -> &S {
        match self {
            Transport::Tcp(s) => s,
            Transport::Tls(t) => &t.sock,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(_))
    }

    /// The socket raised a readable edge: what the last short read said is stale.
    #[inline]
    pub fn readable(&mut self) {
        if let Transport::Tls(t) = self {
            t.drained = false;
        }
    }

    /// Does a short read from `read` mean the socket was drained? True for plain TCP only.
    #[inline]
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Tcp(_))
    }

    /// Drive the handshake as far as the socket allows: Ok(true) when it is done (at once
    /// for TCP), Ok(false) when it waits for the socket. TLS failures come back as errors
    /// whose kind `tls::failure_kind` tells.
    pub fn handshake(&mut self) -> io::Result<bool> {
        let Transport::Tls(t) = self else {
            return Ok(true);
        };
        loop {
            t.flush()?;
            if !t.conn.is_handshaking() {
                return Ok(true);
            }
            match t.fill() {
                Ok(0) => {
                    return Err(tls::failure(
                        ErrorKind::TlsHandshake,
                        "the server closed the connection during the handshake".into(),
                    ))
                }
                Ok(_) => t.process(true)?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// After the handshake: full or resumed, and what was agreed.
    pub fn handshake_info(&self) -> Option<HandshakeInfo> {
        let Transport::Tls(t) = self else {
            return None;
        };
        Some(HandshakeInfo {
            resumed: t.conn.handshake_kind() == Some(HandshakeKind::Resumed),
            version: t
                .conn
                .protocol_version()
                .map(|v| v.as_str().unwrap_or("unknown").replace('_', ".")),
            cipher: t
                .conn
                .negotiated_cipher_suite()
                .map(|c| c.suite().as_str().unwrap_or("unknown").to_string()),
            alpn: t
                .conn
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        })
    }

    /// Write plaintext; returns how much was taken. Under TLS it is encrypted and sent as far
    /// as the socket takes it; `flush` sends the rest.
    #[inline]
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.write(buf),
            Transport::Tls(t) => {
                // rustls takes plaintext up to its buffer limit; when full, send records first.
                for _ in 0..2 {
                    let n = t.conn.writer().write(buf)?;
                    let all_out = t.flush()?;
                    if n > 0 || buf.is_empty() {
                        return Ok(n);
                    }
                    if !all_out {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                }
                Err(io::ErrorKind::WriteZero.into())
            }
        }
    }

    /// Send what is buffered: Ok(true) when nothing is left (always for TCP).
    #[inline]
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Transport::Tcp(_) => Ok(true),
            Transport::Tls(t) => t.flush(),
        }
    }

    /// Read plaintext. Ok(0) is the end of the stream (under TLS also a close without
    /// close_notify: HTTP framing, not TLS, says whether the response was whole).
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Tcp(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
        }
    }
}

impl<S: Read + Write> TlsStream<S> {
    /// Write pending TLS records: Ok(true) when all went out.
    fn flush(&mut self) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Read TLS records from the socket into rustls.
    fn fill(&mut self) -> io::Result<usize> {
        if self.eof {
            return Ok(0);
        }
        if self.drained {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut noting = Noting {
            sock: &mut self.sock,
            short: false,
        };
        let n = self.conn.read_tls(&mut noting)?;
        self.drained = self.edge_triggered && noting.short && n > 0;
        self.eof = n == 0;
        Ok(n)
    }

    /// Decrypt what arrived; on a TLS error try to send the alert rustls queued.
    fn process(&mut self, handshaking: bool) -> io::Result<()> {
        match self.conn.process_new_packets() {
            Ok(_) => {
                if self.conn.wants_write() {
                    // Post-handshake replies (key updates) or the client's Finished.
                    self.flush()?;
                }
                Ok(())
            }
            Err(e) => {
                let _ = self.flush();
                Err(tls::io_error(&e, handshaking))
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            if self.eof {
                return Ok(0);
            }
            // rustls holds no plaintext: a new read from the socket is due. After a short one
            // the socket is known empty (a new edge will come).
            match self.fill() {
                Ok(_) => self.process(false)?,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_is_the_socket_itself() {
        let mut t: Transport<io::Cursor<Vec<u8>>> = Transport::Tcp(io::Cursor::new(Vec::new()));
        assert!(t.handshake().unwrap());
        assert!(t.short_read_drains());
        assert_eq!(t.write(b"abc").unwrap(), 3);
        assert!(t.flush().unwrap());
        assert!(t.handshake_info().is_none());
    }
}
