//! One request on an HTTP/3 stream (`exchange`: send the head and body, read the answer)
//! and how QUIC's and h3's failures become error kinds: the handshake (our certificate
//! check, version negotiation, anything else), a stream reset with its code, a
//! CONNECTION_CLOSE with its code, the idle timeout.

use super::{H3Request, H3Setup};
use bytes::{Buf, Bytes};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use webtune_model::{ErrorKind, H3Summary};

pub(crate) type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// How a connection's first request goes: in 1-RTT as asked, in 0-RTT with the server's
/// verdict to come, or in 1-RTT because `--0rtt` found no session ticket to use.
pub(crate) enum Opening {
    OneRtt,
    ZeroRtt(quinn::ZeroRttAccepted),
    NoTicket,
}

/// A QUIC connection to `addr`, or the kind of its failure.
pub(crate) async fn connect(
    endpoint: &quinn::Endpoint,
    client: &quinn::ClientConfig,
    setup: &H3Setup,
    addr: SocketAddr,
    connect_timeout: Duration,
    try_0rtt: bool,
) -> Result<(quinn::Connection, Opening), ErrorKind> {
    let connecting = endpoint
        .connect_with(client.clone(), addr, &setup.server_name)
        .map_err(|e| match e {
            quinn::ConnectError::InvalidRemoteAddress(_) => ErrorKind::ConnectOther,
            _ => ErrorKind::QuicHandshake,
        })?;
    // `--0rtt` with a session ticket from an earlier connection: usable at once, the
    // first request goes with the ClientHello.
    let (connecting, opening) = match try_0rtt {
        true => match connecting.into_0rtt() {
            Ok((conn, accepted)) => return Ok((conn, Opening::ZeroRtt(accepted))),
            Err(connecting) => (connecting, Opening::NoTicket),
        },
        false => (connecting, Opening::OneRtt),
    };
    match tokio::time::timeout(connect_timeout, connecting).await {
        Err(_) => Err(ErrorKind::QuicHandshake),
        Ok(Err(e)) => Err(handshake_kind(&e)),
        Ok(Ok(conn)) => Ok((conn, opening)),
    }
}

/// Why a handshake failed: our own certificate check (as over TCP), no common version,
/// or any other reason.
pub(crate) fn handshake_kind(e: &quinn::ConnectionError) -> ErrorKind {
    match e {
        quinn::ConnectionError::VersionMismatch => ErrorKind::QuicVersionNegotiation,
        quinn::ConnectionError::TransportError(t) if t.reason.contains("certificate") => {
            ErrorKind::TlsCertificate
        }
        _ => ErrorKind::QuicHandshake,
    }
}

/// The kind a connection's end gives the requests it leaves open, if it has ended.
pub(crate) fn connection_kind(conn: &quinn::Connection) -> Option<ErrorKind> {
    Some(match conn.close_reason()? {
        quinn::ConnectionError::TimedOut => ErrorKind::QuicIdleTimeout,
        quinn::ConnectionError::VersionMismatch => ErrorKind::QuicVersionNegotiation,
        quinn::ConnectionError::Reset => ErrorKind::Reset,
        quinn::ConnectionError::LocallyClosed => ErrorKind::ClosedEarly,
        _ => ErrorKind::QuicConnectionClose,
    })
}

/// A CONNECTION_CLOSE from the server, counted by its code.
pub(crate) fn note_close(s: &mut H3Summary, reason: &quinn::ConnectionError) {
    let code = match reason {
        quinn::ConnectionError::ConnectionClosed(c) => {
            format!("transport:{}", u64::from(c.error_code))
        }
        quinn::ConnectionError::ApplicationClosed(c) => {
            format!("application:{}", c.error_code.into_inner())
        }
        quinn::ConnectionError::TransportError(t) => format!("transport:{}", u64::from(t.code)),
        _ => return,
    };
    *s.connection_closes.entry(code).or_insert(0) += 1;
}

/// What one exchange ended with.
pub(crate) struct Answer {
    pub status: u16,
    pub first_byte: Instant,
    pub head_bytes: u64,
    pub body_bytes: u64,
    pub body: Option<Vec<u8>>,
    pub server: Option<String>,
}

pub(crate) enum Failure {
    /// The server sent GOAWAY before this request's stream opened: it was never sent.
    Goaway,
    Stream(h3::error::StreamError),
}

pub(crate) async fn exchange(
    send: &mut SendRequest,
    request: &H3Request,
    keep_body: bool,
) -> Result<Answer, Failure> {
    let mut stream = match send.send_request(request.head()).await {
        Ok(stream) => stream,
        Err(h3::error::StreamError::RemoteClosing { .. }) => return Err(Failure::Goaway),
        Err(e) => return Err(Failure::Stream(e)),
    };
    if !request.body.is_empty() {
        stream
            .send_data(request.body.clone())
            .await
            .map_err(Failure::Stream)?;
    }
    stream.finish().await.map_err(Failure::Stream)?;
    let response = stream.recv_response().await.map_err(Failure::Stream)?;
    let first_byte = Instant::now();
    let head_bytes = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().len() + v.len() + 4) as u64)
        .sum::<u64>()
        + 12;
    let server = response
        .headers()
        .get(http::header::SERVER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body_bytes = 0u64;
    let mut body = keep_body.then(Vec::new);
    while let Some(mut chunk) = stream.recv_data().await.map_err(Failure::Stream)? {
        let n = chunk.remaining();
        body_bytes += n as u64;
        match body.as_mut() {
            Some(b) => {
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    b.extend_from_slice(part);
                    let len = part.len();
                    chunk.advance(len);
                }
            }
            None => chunk.advance(n),
        }
    }
    Ok(Answer {
        status: response.status().as_u16(),
        first_byte,
        head_bytes,
        body_bytes,
        body,
        server,
    })
}

/// A failed stream's kind, and whether its connection is gone (the stream loop then ends).
pub(crate) fn stream_kind(
    e: &h3::error::StreamError,
    conn: &quinn::Connection,
    summary: &mut H3Summary,
) -> (ErrorKind, bool) {
    use h3::error::StreamError as E;
    match e {
        E::RemoteTerminate { code, .. } => {
            *summary.stream_resets.entry(code.value()).or_insert(0) += 1;
            (ErrorKind::H3StreamReset, false)
        }
        E::HeaderTooBig { .. } => (ErrorKind::HeaderTooLarge, false),
        E::StreamError { .. } => (ErrorKind::Malformed, false),
        E::RemoteClosing { .. } => (ErrorKind::QuicConnectionClose, true),
        _ => match connection_kind(conn) {
            Some(kind) => (kind, true),
            None => (ErrorKind::Reset, false),
        },
    }
}
