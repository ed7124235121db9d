//! SMTP replies, parsed in place as bytes arrive (sans-I/O): "250-first line", …,
//! "250 last line". A reply is complete at its last line; its code is the three digits
//! every line starts with. EHLO's extension keywords (PIPELINING, STARTTLS) are noted on
//! the way. A line that is no reply line, a code that changes within a reply, a line longer
//! than `MAX_LINE` or a reply of more than `MAX_LINES` lines is a protocol error: the
//! server sent garbage, and the connection cannot be trusted.

/// The longest reply line accepted (RFC 5321 allows 512 octets; servers send more text).
pub const MAX_LINE: usize = 4096;
/// The most lines one reply may have.
pub const MAX_LINES: u32 = 200;

/// Why bytes from the server are no SMTP reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyError {
    /// Not three digits then ' ', '-' or the line's end; or a code other than the first
    /// line's.
    Garbage,
    /// A line over `MAX_LINE` bytes or a reply over `MAX_LINES` lines.
    TooLong,
}

/// The reply being read.
#[derive(Debug, Default)]
pub struct ReplyParser {
    /// The current line's first bytes (up to the keyword an EHLO line may carry).
    head: [u8; 16],
    head_len: usize,
    /// Bytes in the current line so far.
    line_len: usize,
    lines: u32,
    code: u16,
    pipelining: bool,
    starttls: bool,
}

impl ReplyParser {
    pub fn new() -> ReplyParser {
        ReplyParser::default()
    }

    /// Forget any partial reply (a new connection).
    pub fn reset(&mut self) {
        *self = ReplyParser::default();
    }

    /// Did the last complete reply advertise PIPELINING / STARTTLS (EHLO's keywords)?
    pub fn pipelining(&self) -> bool {
        self.pipelining
    }

    pub fn starttls(&self) -> bool {
        self.starttls
    }

    /// Read `data` up to the end of the first reply it completes: Some((code, bytes used))
    /// then (call again with the rest), None when all of `data` was used and no reply ended.
    pub fn feed(&mut self, data: &[u8]) -> Result<Option<(u16, usize)>, ReplyError> {
        for (at, &byte) in data.iter().enumerate() {
            if byte != b'\n' {
                if self.head_len < self.head.len() {
                    self.head[self.head_len] = byte;
                    self.head_len += 1;
                }
                self.line_len += 1;
                if self.line_len > MAX_LINE {
                    return Err(ReplyError::TooLong);
                }
                continue;
            }
            if let Some(code) = self.end_line()? {
                return Ok(Some((code, at + 1)));
            }
        }
        Ok(None)
    }

    /// The current line ended: its code if it was the reply's last line.
    fn end_line(&mut self) -> Result<Option<u16>, ReplyError> {
        let mut head = &self.head[..self.head_len];
        if self.line_len <= self.head.len() {
            if let [rest @ .., b'\r'] = head {
                head = rest;
            }
        }
        let digits = head.get(..3).ok_or(ReplyError::Garbage)?;
        if !digits.iter().all(u8::is_ascii_digit) || !(b'2'..=b'5').contains(&digits[0]) {
            return Err(ReplyError::Garbage);
        }
        let code = digits
            .iter()
            .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
        let last = match head.get(3) {
            None | Some(b' ') | Some(b'\r') => true,
            Some(b'-') => false,
            Some(_) => return Err(ReplyError::Garbage),
        };
        if self.lines == 0 {
            self.code = code;
            self.pipelining = false;
            self.starttls = false;
        } else if code != self.code {
            return Err(ReplyError::Garbage);
        }
        self.lines += 1;
        if self.lines > MAX_LINES {
            return Err(ReplyError::TooLong);
        }
        if self.lines > 1 || !last {
            let word = head.get(4..).unwrap_or(&[]);
            let word = word
                .split(|b| *b == b' ' || *b == b'\r')
                .next()
                .unwrap_or(&[]);
            if word.eq_ignore_ascii_case(b"PIPELINING") {
                self.pipelining = true;
            } else if word.eq_ignore_ascii_case(b"STARTTLS") {
                self.starttls = true;
            }
        }
        self.head_len = 0;
        self.line_len = 0;
        if last {
            self.lines = 0;
            return Ok(Some(code));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut ReplyParser, mut data: &[u8]) -> Result<Vec<u16>, ReplyError> {
        let mut codes = Vec::new();
        while let Some((code, used)) = p.feed(data)? {
            codes.push(code);
            data = &data[used..];
        }
        Ok(codes)
    }

    #[test]
    fn single_and_multiline_replies_and_their_keywords() {
        let mut p = ReplyParser::new();
        assert_eq!(all(&mut p, b"220 sink ESMTP\r\n").unwrap(), vec![220]);
        let ehlo = b"250-sink\r\n250-PIPELINING\r\n250-SIZE 1000\r\n250 STARTTLS\r\n";
        assert_eq!(all(&mut p, ehlo).unwrap(), vec![250]);
        assert!(p.pipelining() && p.starttls());
        // Pipelined replies arriving together, the last one split across reads.
        assert_eq!(
            all(&mut p, b"250 ok\r\n250 ok\r\n35").unwrap(),
            vec![250, 250]
        );
        assert_eq!(all(&mut p, b"4 go on\r\n").unwrap(), vec![354]);
        assert!(!p.pipelining());
        assert_eq!(all(&mut p, b"250\n").unwrap(), vec![250]);
    }

    #[test]
    fn garbage_and_floods_are_protocol_errors() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\n"[..],
            b"25\r\n",
            b"250x\r\n",
            b"650 no\r\n",
            b"250-a\r\n251 b\r\n",
        ] {
            let mut p = ReplyParser::new();
            assert_eq!(all(&mut p, bad), Err(ReplyError::Garbage), "{bad:?}");
        }
        let mut p = ReplyParser::new();
        let long = vec![b'2'; MAX_LINE + 1];
        assert_eq!(all(&mut p, &long), Err(ReplyError::TooLong));
        let mut p = ReplyParser::new();
        let many = b"250-x\r\n".repeat(MAX_LINES as usize + 1);
        assert_eq!(all(&mut p, &many), Err(ReplyError::TooLong));
    }
}
