//! One client HTTP/2 connection, sans I/O: bytes from the socket go in (`feed`), frames to
//! send come out (`out`), and what happened to each stream is told as events. It owns the
//! stream table (by the caller's slot number, "tag"), the HPACK decoder, and flow control.
//! What each frame from the server does is `inbound`'s.
//!
//! Windows: the client offers 2^30−1 bytes per stream and per connection (as h2load does by
//! default), and tops a window up once half of it is used, so receiving is never held back
//! by the client. Request bodies respect the server's windows; a body that does not fit
//! waits in its stream until the server opens them (`flow_waits` counts those waits).
//! Streams share the connection's window oldest first (`waiting`, in the order the streams
//! were opened): whatever the server opens goes to the oldest body that can use it, so a
//! body never waits while a stream opened after it is given window. Before, the window
//! went to the stream in the lowest slot, and slots are reused: with bodies larger than the
//! connection window (nghttpd `--echo-upload`, 100 KB POSTs, 10 streams) a stream in a high
//! slot got window only when no newer stream wanted it, and waited for the whole run. Oldest
//! first rather than round robin: a body's wait is then bounded by the bodies opened before
//! it, and each body is done as soon as the window allows (round robin would finish every
//! body late). A stream blocked by its own stream window does not hold the others back.
//!
//! Streams wait for the server's SETTINGS: until its preface arrives (a SETTINGS frame, the
//! first it must send, RFC 9113 §3.4) a started stream is held, not sent, and at most
//! `PRE_SETTINGS_STREAMS` are taken (nghttp2's default too). Then as many as the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS allows go out, and the rest are handed back
//! (`Event::Unstarted`) for the caller to send elsewhere or later. The stream table grows
//! with the streams in use, never to `--streams` up front.
//!
//! Every input is classified: a frame that breaks the protocol ends the connection with a
//! `ConnError` (never a panic); a GOAWAY or RST_STREAM from the server is an event. An
//! answer to the preface that starts "HTTP/" is a server that does not speak HTTP/2 there
//! (h2c to an HTTP/1-only server answers `HTTP/1.1 400`): `h2_not_negotiated`, like a
//! server that refuses h2 by ALPN, not `malformed`.

use super::frame;
use super::hpack;
use super::request::H2Request;
use std::collections::VecDeque;
use std::sync::Arc;
use webtune_model::ErrorKind;

/// The window the client offers per stream and for the connection.
pub const RECV_WINDOW: i64 = (1 << 30) - 1;

/// Streams a connection takes before the server's SETTINGS say how many it allows.
pub const PRE_SETTINGS_STREAMS: usize = 100;

/// What happened on a stream (by tag) or to the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The first frame of this stream's response arrived.
    FirstByte(usize),
    /// The response is complete: read it with `stream`, then `release` the tag.
    Done(usize),
    /// The server reset the stream with this error code (RST_STREAM).
    Reset { tag: usize, code: u32 },
    /// A GOAWAY left this stream unprocessed (its id is above the last one the server took);
    /// the tag is already free.
    Refused(usize),
    /// The server sent GOAWAY: no new streams on this connection. `last` is the last
    /// stream id it processed (0: none of this connection's).
    GoAway { code: u32, last: u32 },
    /// The server's SETTINGS allow fewer streams than were held for it: this stream was
    /// never sent, and the tag is already free.
    Unstarted(usize),
}

/// Why the connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnError {
    #[error("HTTP/2 protocol error: {0}")]
    Protocol(&'static str),
    #[error("HPACK: the server's header block did not decode")]
    Compression,
    #[error("a response header block over the limit")]
    HeaderTooLarge,
    /// The answer to the preface is HTTP/1.x: an h2c request to a server that speaks only
    /// HTTP/1 (over TLS, ALPN would have said so first).
    #[error("the server answered HTTP/1.1: it does not speak h2c")]
    Http1Answer,
}

impl ConnError {
    /// How the streams it ends are counted.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ConnError::HeaderTooLarge => ErrorKind::HeaderTooLarge,
            ConnError::Http1Answer => ErrorKind::H2NotNegotiated,
            _ => ErrorKind::Malformed,
        }
    }

    fn code(&self) -> u32 {
        match self {
            ConnError::Compression => frame::COMPRESSION_ERROR,
            _ => frame::PROTOCOL_ERROR,
        }
    }
}

/// One stream's response as it arrives.
#[derive(Debug, Default)]
pub struct Stream {
    /// The tag is taken (by a stream sent, or held for the server's SETTINGS).
    used: bool,
    /// 0 when the tag is free or its stream not sent yet.
    pub id: u32,
    pub status: Option<u16>,
    /// Bytes of this stream's frames, frame headers included.
    pub bytes: u64,
    pub body_bytes: u64,
    /// The body, when asked for (`body_contains` checks).
    pub body: Vec<u8>,
    capture: bool,
    /// The `server` field, when asked for.
    pub server: Option<String>,
    want_server: bool,
    first_byte: bool,
    /// The response is complete (its `Done` event was given).
    done: bool,
    send_window: i64,
    recv_used: i64,
    /// Body bytes still to send, from this offset.
    pending: Option<(Arc<[u8]>, usize)>,
    /// The body has waited for window (counted once in `flow_waits`, however often it
    /// stops).
    flow_waited: bool,
    /// Held until the server's SETTINGS arrive.
    held: Option<H2Request>,
}

/// A header block being assembled across HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
}

/// A client connection's HTTP/2 state.
pub struct Connection {
    /// Bytes to write to the socket, in order; the caller drains them.
    pub out: Vec<u8>,
    inbuf: Vec<u8>,
    decoder: hpack::Decoder,
    /// By tag; grows to the highest tag used.
    streams: Vec<Stream>,
    /// Tags in use (streams sent or held).
    open: usize,
    /// The server's first SETTINGS arrived.
    settled: bool,
    /// Tags held for the server's SETTINGS, in the order they were started.
    held: Vec<usize>,
    next_id: u32,
    peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    /// Tags whose bodies are not all sent, in the order their streams were opened: the
    /// order in which they are given window.
    waiting: VecDeque<usize>,
    /// A WINDOW_UPDATE or SETTINGS came in the bytes being fed: the waiting bodies are
    /// given window once all of them are read (a connection's update and an older
    /// stream's, arriving together, then both count before the window is shared).
    window_opened: bool,
    recv_used: i64,
    block: Vec<u8>,
    continuing: Option<Block>,
    goaway: bool,
    /// Request bodies that waited for the server's flow-control window (each once, however
    /// often it stopped).
    pub flow_waits: u64,
}

impl Connection {
    /// A new connection; `out` holds the preface.
    pub fn new() -> Connection {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, RECV_WINDOW as u32),
            ],
        );
        frame::window_update(&mut out, 0, (RECV_WINDOW - frame::DEFAULT_WINDOW) as u32);
        Connection {
            out,
            inbuf: Vec::new(),
            decoder: hpack::Decoder::new(),
            streams: Vec::new(),
            open: 0,
            settled: false,
            held: Vec::new(),
            next_id: 1,
            peer_max_streams: u32::MAX,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            waiting: VecDeque::new(),
            window_opened: false,
            recv_used: 0,
            block: Vec::new(),
            continuing: None,
            goaway: false,
            flow_waits: 0,
        }
    }

    /// May a new stream start now (no GOAWAY, under the server's stream limit, ids left)?
    /// Before the server's SETTINGS: while fewer than `PRE_SETTINGS_STREAMS` are held.
    pub fn can_open(&self) -> bool {
        let limit = if self.settled {
            u64::from(self.peer_max_streams)
        } else {
            PRE_SETTINGS_STREAMS as u64
        };
        !self.goaway && (self.open as u64) < limit && self.next_id < (1 << 31) - 1
    }

    /// Have the server's SETTINGS arrived (streams go out as they start)?
    #[cfg(test)]
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, if it set one.
    pub fn peer_max_streams(&self) -> Option<u32> {
        (self.peer_max_streams != u32::MAX).then_some(self.peer_max_streams)
    }

    #[cfg(test)]
    pub fn open_streams(&self) -> usize {
        self.open
    }

    pub fn going_away(&self) -> bool {
        self.goaway
    }

    /// Start a stream under `tag` (which must be free) sending `req`: at once when the
    /// server's SETTINGS are in, else held until they are.
    pub fn start(&mut self, tag: usize, req: &H2Request, capture_body: bool, want_server: bool) {
        if tag >= self.streams.len() {
            self.streams.resize_with(tag + 1, Stream::default);
        }
        self.open += 1;
        let s = &mut self.streams[tag];
        s.used = true;
        s.id = 0;
        s.status = None;
        s.bytes = 0;
        s.body_bytes = 0;
        s.body.clear();
        s.capture = capture_body;
        s.server = None;
        s.want_server = want_server;
        s.first_byte = false;
        s.done = false;
        s.recv_used = 0;
        s.pending = None;
        s.flow_waited = false;
        if self.settled {
            self.send(tag, req);
        } else {
            s.held = Some(req.clone());
            self.held.push(tag);
        }
    }

    /// Send stream `tag`'s HEADERS (and as much of its body as the windows allow).
    fn send(&mut self, tag: usize, req: &H2Request) {
        let id = self.next_id;
        self.next_id += 2;
        let s = &mut self.streams[tag];
        s.id = id;
        s.send_window = self.peer_initial_window;
        let has_body = !req.body.is_empty();
        frame::headers(
            &mut self.out,
            id,
            &req.block,
            !has_body,
            self.peer_max_frame,
        );
        s.pending = has_body.then(|| (Arc::clone(&req.body), 0));
        if has_body {
            // Behind every body still waiting: what window there is goes to older streams
            // first (it goes at once only when they cannot use it).
            self.waiting.push_back(tag);
            if self.send_body(tag) {
                self.waiting.pop_back();
            }
        }
    }

    /// The stream under `tag`.
    pub fn stream(&self, tag: usize) -> &Stream {
        &self.streams[tag]
    }

    /// Bytes of the stream's frames received so far (0 for a tag never used).
    pub fn received(&self, tag: usize) -> u64 {
        self.streams.get(tag).map_or(0, |s| s.bytes)
    }

    /// Take the stream's captured body (leaving it empty).
    pub fn take_body(&mut self, tag: usize) -> Vec<u8> {
        std::mem::take(&mut self.streams[tag].body)
    }

    /// Free `tag` after its Done or Reset event.
    pub fn release(&mut self, tag: usize) {
        let Some(s) = self.streams.get_mut(tag) else {
            return;
        };
        if s.used {
            s.used = false;
            s.id = 0;
            if s.pending.take().is_some() {
                self.waiting.retain(|&t| t != tag);
            }
            if s.held.take().is_some() {
                self.held.retain(|&t| t != tag);
            }
            self.open -= 1;
        }
    }

    /// Give up on a stream (timeout): RST_STREAM(CANCEL) if it was sent, and free its tag.
    pub fn cancel(&mut self, tag: usize) {
        let id = self.streams.get(tag).map_or(0, |s| s.id);
        if id != 0 {
            frame::rst_stream(&mut self.out, id, frame::CANCEL);
        }
        self.release(tag);
    }

    /// The server's SETTINGS arrived: send the held streams it has room for, hand the rest
    /// back.
    fn settle(&mut self, events: &mut Vec<Event>) {
        self.settled = true;
        let limit = u64::from(self.peer_max_streams);
        let mut sent = 0u64;
        for tag in std::mem::take(&mut self.held) {
            let Some(req) = self.streams[tag].held.take() else {
                continue;
            };
            if sent < limit && self.next_id < (1 << 31) - 1 {
                sent += 1;
                self.send(tag, &req);
            } else {
                self.release(tag);
                events.push(Event::Unstarted(tag));
            }
        }
    }

    /// A stream id this client never opened (idle, RFC 9113 §5.1): one of the server's
    /// (even; it may open none with push off) or an odd one not used yet.
    fn idle(&self, id: u32) -> bool {
        id != 0 && (id.is_multiple_of(2) || id >= self.next_id)
    }

    /// Send as much of a stream's pending body as the windows allow; true when all of it
    /// has gone (or there was none).
    fn send_body(&mut self, tag: usize) -> bool {
        let max_frame = self.peer_max_frame;
        let s = &mut self.streams[tag];
        let Some((body, mut at)) = s.pending.take() else {
            return true;
        };
        while at < body.len() {
            let room = self.send_window.min(s.send_window).min(max_frame as i64);
            if room <= 0 {
                if !s.flow_waited {
                    s.flow_waited = true;
                    self.flow_waits += 1;
                }
                s.pending = Some((body, at));
                return false;
            }
            let n = (body.len() - at).min(room as usize);
            let end = at + n == body.len();
            frame::data(&mut self.out, s.id, &body[at..at + n], end);
            self.send_window -= n as i64;
            s.send_window -= n as i64;
            at += n;
        }
        true
    }

    /// The server opened a window: the waiting bodies take it, oldest stream first. A body
    /// held by its own stream's window keeps its place and lets the next one use the
    /// connection's.
    fn resume_bodies(&mut self) {
        let mut k = 0;
        while k < self.waiting.len() {
            let tag = self.waiting[k];
            if self.send_body(tag) {
                self.waiting.remove(k);
            } else {
                k += 1;
            }
        }
    }

    fn tag_of(&self, id: u32) -> Option<usize> {
        if id == 0 {
            return None;
        }
        self.streams.iter().position(|s| s.used && s.id == id)
    }

    /// Take bytes from the socket; events are appended to `events`. After an error the
    /// caller sends what is in `out` (a GOAWAY) and closes the connection.
    pub fn feed(&mut self, input: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        let result = if self.inbuf.is_empty() {
            let used = self.frames(input, events);
            if let Ok(used) = used {
                self.inbuf.extend_from_slice(&input[used..]);
            }
            used.map(|_| ())
        } else {
            let mut buf = std::mem::take(&mut self.inbuf);
            buf.extend_from_slice(input);
            let used = self.frames(&buf, events);
            if let Ok(used) = used {
                buf.drain(..used);
                self.inbuf = buf;
            }
            used.map(|_| ())
        };
        if let Err(e) = &result {
            // The last stream id names the server's streams this client processed: none.
            frame::goaway(&mut self.out, 0, e.code());
        } else if std::mem::take(&mut self.window_opened) {
            self.resume_bodies();
        }
        result
    }
}

impl Default for Connection {
    fn default() -> Self {
        Connection::new()
    }
}

/// A 4-byte big-endian number (None unless `b` is exactly 4 bytes).
fn be32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

mod inbound;
#[cfg(test)]
mod tests;
