//! One client HTTP/2 connection, sans I/O: bytes from the socket go in (`feed`), frames to
//! send come out (`out`), and what happened to each stream is told as events. It owns the
//! stream table (by the caller's slot number, "tag"), the HPACK decoder, and flow control.
//!
//! Windows: the client offers 2^30−1 bytes per stream and per connection (as h2load does by
//! default), and tops a window up once half of it is used, so receiving is never held back
//! by the client. Request bodies respect the server's windows; a body that does not fit
//! waits in its stream until the server opens them (`flow_waits` counts those waits).
//!
//! Every input is classified: a frame that breaks the protocol ends the connection with a
//! `ConnError` (never a panic); a GOAWAY or RST_STREAM from the server is an event.

use super::frame::{self, FrameHeader};
use super::hpack;
use super::request::H2Request;
use std::sync::Arc;
use webtune_model::errors::MAX_RESPONSE_HEAD_BYTES;
use webtune_model::ErrorKind;

/// The window the client offers per stream and for the connection.
pub const RECV_WINDOW: i64 = (1 << 30) - 1;

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
    /// The server sent GOAWAY: no new streams on this connection.
    GoAway { code: u32 },
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
}

impl ConnError {
    /// How the streams it ends are counted.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ConnError::HeaderTooLarge => ErrorKind::HeaderTooLarge,
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
    /// 0 when the tag is free.
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
    send_window: i64,
    recv_used: i64,
    /// Body bytes still to send, from this offset.
    pending: Option<(Arc<[u8]>, usize)>,
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
    streams: Vec<Stream>,
    open: usize,
    next_id: u32,
    peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    recv_used: i64,
    block: Vec<u8>,
    continuing: Option<Block>,
    goaway: bool,
    /// Times a request body waited for the server's flow-control window.
    pub flow_waits: u64,
}

impl Connection {
    /// A new connection with room for `tags` streams at once; `out` holds the preface.
    pub fn new(tags: usize) -> Connection {
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
            streams: (0..tags).map(|_| Stream::default()).collect(),
            open: 0,
            next_id: 1,
            peer_max_streams: u32::MAX,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            recv_used: 0,
            block: Vec::new(),
            continuing: None,
            goaway: false,
            flow_waits: 0,
        }
    }

    /// May a new stream start now (no GOAWAY, under the server's stream limit, ids left)?
    pub fn can_open(&self) -> bool {
        !self.goaway
            && (self.open as u64) < u64::from(self.peer_max_streams)
            && self.next_id < (1 << 31) - 1
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, if it set one.
    pub fn peer_max_streams(&self) -> Option<u32> {
        (self.peer_max_streams != u32::MAX).then_some(self.peer_max_streams)
    }

    pub fn open_streams(&self) -> usize {
        self.open
    }

    pub fn going_away(&self) -> bool {
        self.goaway
    }

    /// Start a stream under `tag` (which must be free) sending `req`.
    pub fn start(&mut self, tag: usize, req: &H2Request, capture_body: bool, want_server: bool) {
        let id = self.next_id;
        self.next_id += 2;
        self.open += 1;
        let s = &mut self.streams[tag];
        s.id = id;
        s.status = None;
        s.bytes = 0;
        s.body_bytes = 0;
        s.body.clear();
        s.capture = capture_body;
        s.server = None;
        s.want_server = want_server;
        s.first_byte = false;
        s.send_window = self.peer_initial_window;
        s.recv_used = 0;
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
            self.send_body(tag);
        }
    }

    /// The stream under `tag`.
    pub fn stream(&self, tag: usize) -> &Stream {
        &self.streams[tag]
    }

    /// Take the stream's captured body (leaving it empty).
    pub fn take_body(&mut self, tag: usize) -> Vec<u8> {
        std::mem::take(&mut self.streams[tag].body)
    }

    /// Free `tag` after its Done or Reset event.
    pub fn release(&mut self, tag: usize) {
        let s = &mut self.streams[tag];
        if s.id != 0 {
            s.id = 0;
            s.pending = None;
            self.open -= 1;
        }
    }

    /// Give up on a stream (timeout): RST_STREAM(CANCEL) and free its tag.
    pub fn cancel(&mut self, tag: usize) {
        let id = self.streams[tag].id;
        if id != 0 {
            frame::rst_stream(&mut self.out, id, frame::CANCEL);
            self.release(tag);
        }
    }

    /// Send as much of a stream's pending body as the windows allow.
    fn send_body(&mut self, tag: usize) {
        let max_frame = self.peer_max_frame;
        let s = &mut self.streams[tag];
        let Some((body, mut at)) = s.pending.take() else {
            return;
        };
        while at < body.len() {
            let room = self.send_window.min(s.send_window).min(max_frame as i64);
            if room <= 0 {
                self.flow_waits += 1;
                s.pending = Some((body, at));
                return;
            }
            let n = (body.len() - at).min(room as usize);
            let end = at + n == body.len();
            frame::data(&mut self.out, s.id, &body[at..at + n], end);
            self.send_window -= n as i64;
            s.send_window -= n as i64;
            at += n;
        }
    }

    fn resume_bodies(&mut self) {
        for tag in 0..self.streams.len() {
            if self.streams[tag].pending.is_some() {
                self.send_body(tag);
            }
        }
    }

    fn tag_of(&self, id: u32) -> Option<usize> {
        if id == 0 {
            return None;
        }
        self.streams.iter().position(|s| s.id == id)
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
            let last = self.next_id.saturating_sub(2);
            frame::goaway(&mut self.out, last, e.code());
        }
        result
    }

    /// Handle every whole frame in `buf`; returns the bytes used.
    fn frames(&mut self, buf: &[u8], events: &mut Vec<Event>) -> Result<usize, ConnError> {
        let mut at = 0;
        while let Some(h) = FrameHeader::parse(&buf[at..]) {
            if h.len > frame::DEFAULT_MAX_FRAME {
                return Err(ConnError::Protocol("a frame over the 16 KiB maximum"));
            }
            let Some(payload) = buf.get(at + frame::HEADER_LEN..at + frame::HEADER_LEN + h.len)
            else {
                break;
            };
            self.frame(h, payload, events)?;
            at += frame::HEADER_LEN + h.len;
        }
        Ok(at)
    }

    fn frame(
        &mut self,
        h: FrameHeader,
        p: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        if let Some(block) = &self.continuing {
            if h.kind != frame::CONTINUATION || h.stream != block.stream {
                return Err(ConnError::Protocol(
                    "a frame between HEADERS and CONTINUATION",
                ));
            }
        }
        let tag = self.tag_of(h.stream);
        if let Some(t) = tag {
            let s = &mut self.streams[t];
            s.bytes += (frame::HEADER_LEN + p.len()) as u64;
            if !s.first_byte && matches!(h.kind, frame::HEADERS | frame::DATA) {
                s.first_byte = true;
                events.push(Event::FirstByte(t));
            }
        }
        match h.kind {
            frame::DATA => self.on_data(h, p, tag, events),
            frame::HEADERS => {
                if h.stream == 0 {
                    return Err(ConnError::Protocol("HEADERS on stream 0"));
                }
                let fragment = frame::unpadded(h.kind, h.flags, p)
                    .ok_or(ConnError::Protocol("bad padding"))?;
                self.block.clear();
                self.block.extend_from_slice(fragment);
                let block = Block {
                    stream: h.stream,
                    end_stream: h.flags & frame::FLAG_END_STREAM != 0,
                };
                if h.flags & frame::FLAG_END_HEADERS != 0 {
                    self.on_block(block, events)
                } else {
                    self.continuing = Some(block);
                    Ok(())
                }
            }
            frame::CONTINUATION => {
                let Some(block) = self.continuing.take() else {
                    return Err(ConnError::Protocol("CONTINUATION without HEADERS"));
                };
                if self.block.len() + p.len() > MAX_RESPONSE_HEAD_BYTES {
                    return Err(ConnError::HeaderTooLarge);
                }
                self.block.extend_from_slice(p);
                if h.flags & frame::FLAG_END_HEADERS != 0 {
                    self.on_block(block, events)
                } else {
                    self.continuing = Some(block);
                    Ok(())
                }
            }
            frame::RST_STREAM => {
                let code = be32(p).ok_or(ConnError::Protocol("RST_STREAM of a wrong size"))?;
                if h.stream == 0 {
                    return Err(ConnError::Protocol("RST_STREAM on stream 0"));
                }
                if let Some(tag) = tag {
                    events.push(Event::Reset { tag, code });
                }
                Ok(())
            }
            frame::SETTINGS => self.on_settings(h, p),
            frame::PING => {
                if p.len() != 8 || h.stream != 0 {
                    return Err(ConnError::Protocol("a bad PING"));
                }
                if h.flags & frame::FLAG_ACK == 0 {
                    frame::ping_ack(&mut self.out, p);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if p.len() < 8 || h.stream != 0 {
                    return Err(ConnError::Protocol("a bad GOAWAY"));
                }
                let last = be32(&p[..4]).unwrap_or(0) & 0x7fff_ffff;
                let code = be32(&p[4..8]).unwrap_or(0);
                self.goaway = true;
                events.push(Event::GoAway { code });
                for t in 0..self.streams.len() {
                    if self.streams[t].id > last {
                        self.release(t);
                        events.push(Event::Refused(t));
                    }
                }
                Ok(())
            }
            frame::WINDOW_UPDATE => {
                let inc = be32(p).ok_or(ConnError::Protocol("WINDOW_UPDATE of a wrong size"))?;
                let inc = i64::from(inc & 0x7fff_ffff);
                if h.stream == 0 {
                    self.send_window = (self.send_window + inc).min(frame::MAX_WINDOW);
                } else if let Some(t) = tag {
                    let s = &mut self.streams[t];
                    s.send_window = (s.send_window + inc).min(frame::MAX_WINDOW);
                }
                self.resume_bodies();
                Ok(())
            }
            frame::PUSH_PROMISE => Err(ConnError::Protocol("PUSH_PROMISE with push disabled")),
            // PRIORITY and unknown types are ignored (§5.5).
            _ => Ok(()),
        }
    }

    fn on_data(
        &mut self,
        h: FrameHeader,
        p: &[u8],
        tag: Option<usize>,
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        if h.stream == 0 {
            return Err(ConnError::Protocol("DATA on stream 0"));
        }
        let body = frame::unpadded(h.kind, h.flags, p).ok_or(ConnError::Protocol("bad padding"))?;
        // Flow control counts the whole payload, padding included (§6.9.1).
        self.recv_used += p.len() as i64;
        if self.recv_used >= RECV_WINDOW / 2 {
            frame::window_update(&mut self.out, 0, self.recv_used as u32);
            self.recv_used = 0;
        }
        let Some(t) = tag else {
            return Ok(()); // a stream we cancelled
        };
        let s = &mut self.streams[t];
        if s.status.is_none() {
            return Err(ConnError::Protocol("DATA before the response's HEADERS"));
        }
        s.body_bytes += body.len() as u64;
        if s.capture {
            s.body.extend_from_slice(body);
        }
        s.recv_used += p.len() as i64;
        let end = h.flags & frame::FLAG_END_STREAM != 0;
        if !end && s.recv_used >= RECV_WINDOW / 2 {
            frame::window_update(&mut self.out, s.id, s.recv_used as u32);
            s.recv_used = 0;
        }
        if end {
            events.push(Event::Done(t));
        }
        Ok(())
    }

    /// A whole header block arrived: decode it (always: HPACK state is the connection's).
    fn on_block(&mut self, block: Block, events: &mut Vec<Event>) -> Result<(), ConnError> {
        let tag = self.tag_of(block.stream);
        let want_server = tag.is_some_and(|t| self.streams[t].want_server);
        let mut status: Option<u16> = None;
        let mut server: Option<String> = None;
        let mut bad_status = false;
        self.decoder
            .decode(
                &self.block,
                |name| name == b":status" || (want_server && name == b"server"),
                |name, value| {
                    if name == b":status" {
                        status = std::str::from_utf8(value)
                            .ok()
                            .and_then(|v| v.parse().ok())
                            .filter(|s| (100..1000).contains(s));
                        bad_status |= status.is_none();
                    } else {
                        server = Some(String::from_utf8_lossy(value).into_owned());
                    }
                },
            )
            .map_err(|_| ConnError::Compression)?;
        let Some(t) = tag else {
            return Ok(());
        };
        let s = &mut self.streams[t];
        if bad_status {
            return Err(ConnError::Protocol("a bad :status"));
        }
        match (s.status, status) {
            // Interim (1xx) responses come before the final one.
            (_, Some(code)) if (100..200).contains(&code) => {}
            (None, Some(code)) => {
                s.status = Some(code);
                if server.is_some() {
                    s.server = server;
                }
            }
            (None, None) => return Err(ConnError::Protocol("a response without :status")),
            (Some(_), _) if !block.end_stream => {
                return Err(ConnError::Protocol("trailers without END_STREAM"))
            }
            (Some(_), _) => {}
        }
        if block.end_stream {
            if s.status.is_none() {
                return Err(ConnError::Protocol(
                    "a stream ended with only 1xx responses",
                ));
            }
            events.push(Event::Done(t));
        }
        Ok(())
    }

    fn on_settings(&mut self, h: FrameHeader, p: &[u8]) -> Result<(), ConnError> {
        if h.stream != 0 {
            return Err(ConnError::Protocol("SETTINGS on a stream"));
        }
        if h.flags & frame::FLAG_ACK != 0 {
            return if p.is_empty() {
                Ok(())
            } else {
                Err(ConnError::Protocol("a SETTINGS ack with a payload"))
            };
        }
        if !p.len().is_multiple_of(6) {
            return Err(ConnError::Protocol("SETTINGS of a wrong size"));
        }
        for pair in p.chunks_exact(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            let value = be32(&pair[2..]).unwrap_or(0);
            match id {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = value,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    let value = i64::from(value);
                    if value > frame::MAX_WINDOW {
                        return Err(ConnError::Protocol("an initial window over 2^31-1"));
                    }
                    let delta = value - self.peer_initial_window;
                    self.peer_initial_window = value;
                    for s in self.streams.iter_mut().filter(|s| s.id != 0) {
                        s.send_window += delta;
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(ConnError::Protocol("a bad SETTINGS_MAX_FRAME_SIZE"));
                    }
                    self.peer_max_frame = value as usize;
                }
                // Header table size: the client's encoder never indexes, nothing to do.
                _ => {}
            }
        }
        frame::settings_ack(&mut self.out);
        self.resume_bodies();
        Ok(())
    }
}

/// A 4-byte big-endian number (None unless `b` is exactly 4 bytes).
fn be32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

#[cfg(test)]
mod tests;
