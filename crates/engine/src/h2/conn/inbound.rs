//! What each frame from the server does to the connection: the frame layer's input
//! checked against the stream states (RFC 9113 §5.1), header blocks decoded, DATA counted
//! against the windows, SETTINGS applied (the first one settles the held streams).

use super::{be32, Block, ConnError, Connection, Event, RECV_WINDOW};
use crate::h2::frame::{self, FrameHeader};
use webtune_model::errors::MAX_RESPONSE_HEAD_BYTES;

impl Connection {
    /// Handle every whole frame in `buf`; returns the bytes used.
    pub(super) fn frames(
        &mut self,
        buf: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<usize, ConnError> {
        // Every frame the server may send first (SETTINGS) starts with a length byte of 0;
        // "HTTP/" is an HTTP/1 server's answer to the preface.
        if !self.settled && buf.starts_with(b"HTTP/") {
            return Err(ConnError::Http1Answer);
        }
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
        if !self.settled && h.kind != frame::SETTINGS {
            return Err(ConnError::Protocol(
                "the server's first frame is not SETTINGS",
            ));
        }
        let tag = self.tag_of(h.stream);
        // A frame on a stream never opened is a connection error (§5.1); PRIORITY may come
        // on any stream, and unknown types are ignored.
        if tag.is_none()
            && self.idle(h.stream)
            && matches!(
                h.kind,
                frame::DATA | frame::HEADERS | frame::RST_STREAM | frame::WINDOW_UPDATE
            )
        {
            return Err(ConnError::Protocol("a frame on a stream never opened"));
        }
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
                // After a complete response a reset only asks the client to stop sending
                // (RFC 9113 §8.1: nginx sends NO_ERROR when it answered before reading the
                // body): the stream succeeded, and its release stops the body.
                if let Some(tag) = tag.filter(|&t| !self.streams[t].done) {
                    events.push(Event::Reset { tag, code });
                }
                Ok(())
            }
            frame::SETTINGS => self.on_settings(h, p, events),
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
                events.push(Event::GoAway { code, last });
                for t in 0..self.streams.len() {
                    if self.streams[t].used && self.streams[t].id > last {
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
                self.window_opened = true;
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
            s.done = true;
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
            s.done = true;
            events.push(Event::Done(t));
        }
        Ok(())
    }

    fn on_settings(
        &mut self,
        h: FrameHeader,
        p: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
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
                // A server may only say 0 (§6.5.2): any other value is a connection error.
                frame::SETTINGS_ENABLE_PUSH if value != 0 => {
                    return Err(ConnError::Protocol(
                        "SETTINGS_ENABLE_PUSH from a server other than 0",
                    ));
                }
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
        if !self.settled {
            self.settle(events);
        }
        self.window_opened = true;
        Ok(())
    }
}
