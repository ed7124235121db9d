//! The HTTP/1.x response parser: incremental and in place. Headers are parsed with `httparse`
//! straight from the read buffer (copied aside only when a head spans reads); bodies are
//! counted, never kept — by Content-Length, chunked framing, or until the server closes.
//!
//! The answer to a HEAD request has no body (RFC 9110 §9.3.2), whatever its Content-Length.
//! Bytes after it are malformed, however the TCP segments fall: when the server closes the
//! connection after it (`Connection: close`, HTTP/1.0), the response ends at the close, and
//! a byte before the close is malformed — so a server that sends a body after HEAD and then
//! closes (Debian's gunicorn 20.1) is always `malformed`, never `ok` when the body happened
//! to come in a later segment than the head. (RFC 9112 §6.3 lets a client discard what
//! follows instead; we count it, because a body after HEAD breaks every cache and proxy in
//! front of that server, and "bytes after the body are malformed" stays one rule.)

use webtune_model::errors::{MAX_RESPONSE_HEADERS, MAX_RESPONSE_HEAD_BYTES};
use webtune_model::ErrorKind;

/// Largest response head accepted (status line and headers), about what browsers accept.
const MAX_HEAD: usize = MAX_RESPONSE_HEAD_BYTES;
/// Header slots tried first: enough for nearly every response, cheap to set up per head.
const FAST_HEADERS: usize = 64;
/// Most header fields accepted: a head with more than `FAST_HEADERS` is parsed again with
/// this many slots (only those heads pay for it).
const MAX_HEADERS: usize = MAX_RESPONSE_HEADERS;

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Why `feed` gave up on a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not valid HTTP/1.x framing; the reason.
    Malformed(&'static str),
    /// The head has more than `MAX_HEADERS` fields or `MAX_HEAD` bytes.
    HeadTooLarge,
}

impl ParseError {
    /// The error kind a run counts this as.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ParseError::Malformed(_) => ErrorKind::Malformed,
            ParseError::HeadTooLarge => ErrorKind::HeaderTooLarge,
        }
    }
}

impl From<Malformed> for ParseError {
    fn from(m: Malformed) -> ParseError {
        ParseError::Malformed(m.0)
    }
}

/// What the head said, once parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes of the status line and headers.
    pub head_bytes: usize,
    /// The server allows reusing the connection after this response.
    pub keep_alive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    /// The answer to a HEAD on a connection the server closes: nothing may come before the
    /// close.
    NoneUntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of a chunk size (value so far, digits seen).
    Size(u64, u8),
    /// Skipping a chunk extension up to CR.
    Extension(u64),
    /// Expecting LF after the size line (then data of that size, or trailers if 0).
    SizeLf(u64),
    /// Inside chunk data: bytes left.
    Data(u64),
    DataCr,
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer line, up to LF.
    TrailerLine,
    /// Saw CR of the final empty line.
    FinalLf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Head,
    Body(Body),
    Done,
}

/// Outcome of feeding bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The response is not complete yet; all bytes were consumed.
    NeedMore,
    /// The response is complete; `consumed` bytes of the input belonged to it.
    Complete { consumed: usize },
}

/// Parses one response at a time; `reset` prepares it for the next.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    /// Part of a head that arrived in an earlier read.
    pending_head: Vec<u8>,
    head: Option<Head>,
    body_bytes: u64,
    no_body: bool,
    /// Capture the `Server` header of the next response (asked once per worker).
    want_server: bool,
    server: Option<String>,
    /// Keep body bytes (for a scenario's body check), up to `MAX_CAPTURE`.
    keep_body: bool,
    body: Vec<u8>,
    /// Keep `Set-Cookie` values (journeys' cookie jars), one per line.
    want_cookies: bool,
    cookies: Vec<u8>,
}

/// Most body bytes kept for a body check.
const MAX_CAPTURE: usize = 16 * 1024 * 1024;

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            state: State::Head,
            pending_head: Vec::new(),
            head: None,
            body_bytes: 0,
            no_body: false,
            want_server: false,
            server: None,
            keep_body: false,
            body: Vec::new(),
            want_cookies: false,
            cookies: Vec::new(),
        }
    }

    /// Prepare for the next response; `no_body` for the answer to a HEAD request.
    pub fn reset(&mut self, no_body: bool) {
        self.state = State::Head;
        self.pending_head.clear();
        self.head = None;
        self.body_bytes = 0;
        self.no_body = no_body;
        self.want_server = false;
        self.server = None;
        self.body.clear();
        self.cookies.clear();
    }

    /// Keep this response's `Set-Cookie` values (a journey's user stores them).
    pub fn capture_cookies(&mut self, keep: bool) {
        self.want_cookies = keep;
    }

    /// The kept `Set-Cookie` values, one per line (empty unless asked for).
    pub fn set_cookies(&self) -> &[u8] {
        &self.cookies
    }

    /// Keep this response's body bytes (for a body check).
    pub fn capture_body(&mut self, keep: bool) {
        self.keep_body = keep;
    }

    /// The kept body (empty unless `capture_body(true)`).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.keep_body && self.body.len() < MAX_CAPTURE {
            let room = MAX_CAPTURE - self.body.len();
            self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    /// Ask for the `Server` header of the next response.
    pub fn capture_server(&mut self) {
        self.want_server = true;
    }

    /// The captured `Server` header, if asked for and present.
    pub fn take_server(&mut self) -> Option<String> {
        self.server.take()
    }

    pub fn head(&self) -> Option<Head> {
        self.head
    }

    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// True when the response runs until the server closes (not reusable afterwards).
    pub fn until_close(&self) -> bool {
        matches!(
            self.state,
            State::Body(Body::UntilClose | Body::NoneUntilClose)
        )
    }

    /// Feed the next bytes read from the connection.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Progress, ParseError> {
        let total = data.len();
        loop {
            match self.state {
                State::Done => {
                    return Ok(Progress::Complete {
                        consumed: total - data.len(),
                    })
                }
                State::Head => {
                    let used = self.parse_head(data)?;
                    match used {
                        None => return Ok(Progress::NeedMore),
                        Some(n) => data = &data[n..],
                    }
                }
                State::Body(body) => {
                    let (used, next) = self.consume_body(body, data)?;
                    data = &data[used..];
                    self.state = next;
                    if !matches!(self.state, State::Done) && data.is_empty() {
                        return Ok(Progress::NeedMore);
                    }
                }
            }
        }
    }

    /// The server closed the connection: is the response complete?
    pub fn finish_at_eof(&mut self) -> bool {
        match self.state {
            State::Body(Body::UntilClose | Body::NoneUntilClose) => {
                self.state = State::Done;
                true
            }
            State::Done => true,
            _ => false,
        }
    }

    /// Parse the head; returns bytes of `data` used when the head is complete.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; FAST_HEADERS];
        let mut many_headers = Vec::new();
        let mut response = httparse::Response::new(&mut headers);
        let from_pending = !self.pending_head.is_empty();
        let buf: &[u8] = if from_pending {
            self.pending_head.extend_from_slice(data);
            &self.pending_head
        } else {
            data
        };
        let status = match response.parse(buf) {
            Err(httparse::Error::TooManyHeaders) => {
                many_headers.resize(MAX_HEADERS, httparse::EMPTY_HEADER);
                response = httparse::Response::new(&mut many_headers);
                response.parse(buf)
            }
            parsed => parsed,
        };
        let status = status.map_err(|e| match e {
            httparse::Error::TooManyHeaders => ParseError::HeadTooLarge,
            _ => ParseError::Malformed("bad status line or header"),
        })?;
        let head_len = match status {
            httparse::Status::Partial => {
                if buf.len() > MAX_HEAD {
                    return Err(ParseError::HeadTooLarge);
                }
                if !from_pending {
                    self.pending_head.extend_from_slice(data);
                }
                return Ok(None);
            }
            httparse::Status::Complete(n) if n > MAX_HEAD => return Err(ParseError::HeadTooLarge),
            httparse::Status::Complete(n) => n,
        };
        let code = response.code.unwrap_or(0);
        let minor = response.version.unwrap_or(1);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut close = minor == 0;
        for h in response.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = parse_length(h.value).ok_or(Malformed("bad length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(Malformed("conflicting content-length").into());
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .split(|&b| b == b',')
                    .next_back()
                    .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if self.want_cookies && h.name.eq_ignore_ascii_case("set-cookie") {
                // A header value holds no line feed (httparse refuses one), so lines separate.
                self.cookies.extend_from_slice(h.value);
                self.cookies.push(b'\n');
            } else if self.want_server && h.name.eq_ignore_ascii_case("server") {
                self.server = Some(String::from_utf8_lossy(h.value).into_owned());
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && minor == 0 {
                        close = false;
                    }
                }
            }
        }
        // Bytes of `data` that belonged to the head.
        let used = if from_pending {
            let earlier = self.pending_head.len() - data.len();
            self.pending_head.clear();
            head_len - earlier
        } else {
            head_len
        };
        if (100..200).contains(&code) {
            // An interim response (100 Continue, 103 Early Hints): the real one follows.
            return Ok(Some(used));
        }
        self.head = Some(Head {
            status: code,
            head_bytes: head_len,
            keep_alive: !close,
        });
        let bodiless = self.no_body || code == 204 || code == 304;
        self.state = if self.no_body && close {
            State::Body(Body::NoneUntilClose)
        } else if bodiless {
            State::Done
        } else if chunked {
            State::Body(Body::Chunked(Chunk::Size(0, 0)))
        } else if let Some(n) = length {
            if n == 0 {
                State::Done
            } else {
                State::Body(Body::Length(n))
            }
        } else {
            State::Body(Body::UntilClose)
        };
        Ok(Some(used))
    }

    /// Consume body bytes; returns bytes used and the next state.
    fn consume_body(&mut self, body: Body, data: &[u8]) -> Result<(usize, State), Malformed> {
        match body {
            Body::Length(left) => {
                let take = (data.len() as u64).min(left);
                self.body_bytes += take;
                self.keep(&data[..take as usize]);
                let next = if take == left {
                    State::Done
                } else {
                    State::Body(Body::Length(left - take))
                };
                Ok((take as usize, next))
            }
            Body::UntilClose => {
                self.body_bytes += data.len() as u64;
                self.keep(data);
                Ok((data.len(), State::Body(Body::UntilClose)))
            }
            Body::NoneUntilClose if data.is_empty() => Ok((0, State::Body(body))),
            Body::NoneUntilClose => Err(Malformed("bytes after the answer to a HEAD request")),
            Body::Chunked(mut chunk) => {
                let mut i = 0;
                while i < data.len() {
                    let b = data[i];
                    chunk = match chunk {
                        Chunk::Size(v, digits) => match hex_value(b) {
                            Some(d) => {
                                if digits >= 15 {
                                    return Err(Malformed("chunk size too large"));
                                }
                                Chunk::Size(v * 16 + d, digits + 1)
                            }
                            None if digits == 0 => return Err(Malformed("bad chunk size")),
                            None if b == b'\r' => Chunk::SizeLf(v),
                            None if b == b';' || b == b' ' || b == b'\t' => Chunk::Extension(v),
                            None => return Err(Malformed("bad chunk size")),
                        },
                        Chunk::Extension(v) => {
                            if b == b'\r' {
                                Chunk::SizeLf(v)
                            } else if b == b'\n' {
                                return Err(Malformed("bad chunk size line"));
                            } else {
                                Chunk::Extension(v)
                            }
                        }
                        Chunk::SizeLf(v) => {
                            if b != b'\n' {
                                return Err(Malformed("bad chunk size line"));
                            }
                            if v == 0 {
                                Chunk::TrailerStart
                            } else {
                                Chunk::Data(v)
                            }
                        }
                        Chunk::Data(left) => {
                            let take = ((data.len() - i) as u64).min(left);
                            self.body_bytes += take;
                            self.keep(&data[i..i + take as usize]);
                            i += take as usize;
                            let rest = left - take;
                            chunk = if rest == 0 {
                                Chunk::DataCr
                            } else {
                                Chunk::Data(rest)
                            };
                            continue;
                        }
                        Chunk::DataCr => {
                            if b != b'\r' {
                                return Err(Malformed("chunk data longer than its size"));
                            }
                            Chunk::DataLf
                        }
                        Chunk::DataLf => {
                            if b != b'\n' {
                                return Err(Malformed("chunk data longer than its size"));
                            }
                            Chunk::Size(0, 0)
                        }
                        Chunk::TrailerStart => {
                            if b == b'\r' {
                                Chunk::FinalLf
                            } else {
                                Chunk::TrailerLine
                            }
                        }
                        Chunk::TrailerLine => {
                            if b == b'\n' {
                                Chunk::TrailerStart
                            } else {
                                Chunk::TrailerLine
                            }
                        }
                        Chunk::FinalLf => {
                            if b != b'\n' {
                                return Err(Malformed("bad end of chunked body"));
                            }
                            return Ok((i + 1, State::Done));
                        }
                    };
                    i += 1;
                }
                Ok((i, State::Body(Body::Chunked(chunk))))
            }
        }
    }
}

/// A Content-Length value: decimal digits, optional surrounding whitespace.
fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

fn hex_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u64),
        b'a'..=b'f' => Some((b - b'a' + 10) as u64),
        b'A'..=b'F' => Some((b - b'A' + 10) as u64),
        _ => None,
    }
}

#[cfg(test)]
#[path = "http1_tests.rs"]
mod tests;
