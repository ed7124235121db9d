//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte frame header, the frame types and flags the
//! client uses, and writers for the frames it sends. Pure byte work, no I/O and no state.

/// What a client sends first on every HTTP/2 connection (§3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;
/// The largest frame payload either side may send until told otherwise (§4.2).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The flow-control window every stream and the connection start with (§6.9.2).
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest window flow control allows (§6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
#[allow(dead_code)] // RFC 9113's frame types, kept whole: the client never sends one
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

#[allow(dead_code)] // the settings registry, kept whole: the client leaves it at its default
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error codes (§7) the client sends or names.
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
#[allow(dead_code)] // named for a reader of a server's GOAWAY; the client sends neither
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
#[allow(dead_code)]
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;

/// A frame's fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    /// The reserved top bit is ignored (§4.1).
    pub stream: u32,
}

impl FrameHeader {
    /// Read a header from the first 9 bytes of `b` (None if fewer).
    #[inline]
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }
}

/// Append a frame header.
#[inline]
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// A SETTINGS frame with these (identifier, value) pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    write_header(out, pairs.len() * 6, SETTINGS, 0, 0);
    for &(id, value) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn settings_ack(out: &mut Vec<u8>) {
    write_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    write_header(out, payload.len(), PING, FLAG_ACK, 0);
    out.extend_from_slice(payload);
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    write_header(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// HEADERS (and CONTINUATION frames when the block is longer than `max_frame`).
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let max_frame = max_frame.max(1);
    let mut chunks = block.chunks(max_frame);
    let first = chunks.next().unwrap_or(&[]);
    let single = block.len() <= max_frame;
    let mut flags = if end_stream { FLAG_END_STREAM } else { 0 };
    if single {
        flags |= FLAG_END_HEADERS;
    }
    write_header(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut rest = chunks.peekable();
    while let Some(chunk) = rest.next() {
        let flags = if rest.peek().is_none() {
            FLAG_END_HEADERS
        } else {
            0
        };
        write_header(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

/// One DATA frame (the caller keeps it within the frame size and the windows).
pub fn data(out: &mut Vec<u8>, stream: u32, bytes: &[u8], end_stream: bool) {
    let flags = if end_stream { FLAG_END_STREAM } else { 0 };
    write_header(out, bytes.len(), DATA, flags, stream);
    out.extend_from_slice(bytes);
}

/// The payload of a DATA or HEADERS frame without its padding (and, for HEADERS, without
/// the priority fields); None when the padding is longer than the frame (§6.1, §6.2).
pub fn unpadded(kind: u8, flags: u8, payload: &[u8]) -> Option<&[u8]> {
    let mut p = payload;
    let mut pad = 0usize;
    if flags & FLAG_PADDED != 0 {
        let (&n, rest) = p.split_first()?;
        pad = usize::from(n);
        p = rest;
    }
    if kind == HEADERS && flags & FLAG_PRIORITY != 0 {
        p = p.get(5..)?;
    }
    p.get(..p.len().checked_sub(pad)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips() {
        let mut out = Vec::new();
        write_header(&mut out, 0x12345, HEADERS, FLAG_END_HEADERS, 7);
        let h = FrameHeader::parse(&out).unwrap();
        assert_eq!(
            h,
            FrameHeader {
                len: 0x12345,
                kind: HEADERS,
                flags: FLAG_END_HEADERS,
                stream: 7
            }
        );
        assert!(FrameHeader::parse(&out[..8]).is_none());
    }

    #[test]
    fn long_header_blocks_continue() {
        let mut out = Vec::new();
        headers(&mut out, 1, &[0xaa; 25], true, 10);
        let first = FrameHeader::parse(&out).unwrap();
        assert_eq!(
            (first.len, first.kind, first.flags),
            (10, HEADERS, FLAG_END_STREAM)
        );
        let second = FrameHeader::parse(&out[19..]).unwrap();
        assert_eq!(
            (second.len, second.kind, second.flags),
            (10, CONTINUATION, 0)
        );
        let third = FrameHeader::parse(&out[38..]).unwrap();
        assert_eq!((third.len, third.flags), (5, FLAG_END_HEADERS));
        assert_eq!(out.len(), 3 * 9 + 25);
    }

    #[test]
    fn padding_is_stripped_and_overlong_padding_refused() {
        assert_eq!(
            unpadded(DATA, FLAG_PADDED, &[2, b'a', 0, 0]),
            Some(&b"a"[..])
        );
        assert_eq!(unpadded(DATA, FLAG_PADDED, &[5, b'a']), None);
        assert_eq!(unpadded(DATA, FLAG_PADDED, &[]), None);
        assert_eq!(
            unpadded(HEADERS, FLAG_PRIORITY, &[0, 0, 0, 1, 9, 0x82]),
            Some(&[0x82][..])
        );
        assert_eq!(unpadded(HEADERS, FLAG_PRIORITY, &[0, 0]), None);
    }
}
