//! Generated messages: headers rendered per message, the body cut from one block of seeded
//! text made before the run (so a message costs a copy, not a generator). Lines are
//! `LINE` bytes with CRLF and never begin with '.', so no dot-stuffing is needed; the
//! message ends with "\r\n.\r\n".

use crate::rng::Rng;
use std::io::Write;

/// Bytes per body line, CRLF included (RFC 5322 recommends at most 78 before the CRLF).
pub const LINE: usize = 74;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A block of text lines at least `max_size` long (and one line more), from `seed`.
pub fn text_block(max_size: u64, seed: u64) -> Vec<u8> {
    let lines = (max_size as usize).div_ceil(LINE) + 1;
    let mut rng = Rng::seeded(seed ^ 0x7e47_b10c);
    let mut out = Vec::with_capacity(lines * LINE);
    for _ in 0..lines {
        for col in 0..LINE - 2 {
            let c = if col > 0 && rng.below(6) == 0 {
                b' '
            } else {
                ALPHABET[rng.below(ALPHABET.len() as u64) as usize]
            };
            out.push(c);
        }
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Append one message of about `size` bytes (headers and body; whole lines, so up to a
/// line more), from `from` to `to`, numbered `seq`, and its final dot, to `out`. Returns
/// the message's length before the dot.
#[allow(clippy::too_many_arguments)]
pub fn write_message(
    out: &mut Vec<u8>,
    text: &[u8],
    rng: &mut Rng,
    size: u64,
    from: &str,
    to: &str,
    seq: u64,
    worker_seed: u64,
) -> usize {
    let start = out.len();
    let _ = write!(
        out,
        "From: <{from}>\r\nTo: <{to}>\r\nSubject: webtune test message {seq}\r\n\
         Message-ID: <{seq}.{worker_seed:x}@webtune.invalid>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=us-ascii\r\n\r\n"
    );
    let head = out.len() - start;
    let body = (size as usize).saturating_sub(head);
    let lines = body.div_ceil(LINE);
    let total_lines = text.len() / LINE;
    if lines > 0 && total_lines > lines {
        let first = rng.below((total_lines - lines) as u64) as usize;
        out.extend_from_slice(&text[first * LINE..(first + lines) * LINE]);
    } else if lines > 0 {
        out.extend_from_slice(&text[..lines.min(total_lines) * LINE]);
    }
    let len = out.len() - start;
    out.extend_from_slice(b".\r\n");
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_their_size_need_no_stuffing_and_repeat_with_the_seed() {
        let text = text_block(20_000, 3);
        let one = |seed| {
            let mut rng = Rng::seeded(seed);
            let mut out = Vec::new();
            let len = write_message(&mut out, &text, &mut rng, 10_000, "a@x", "b@y", 1, 9);
            (out, len)
        };
        let (a, len) = one(5);
        assert!((10_000..10_000 + LINE).contains(&len), "{len}");
        assert!(a.ends_with(b"\r\n.\r\n"));
        assert!(!a[..len].windows(3).any(|w| w == b"\n.\r" || w == b"\n.."));
        assert_eq!(one(5).0, a, "same seed, same message");
        assert_ne!(one(6).0, a, "another seed, another body");
        let mut rng = Rng::seeded(1);
        let mut out = Vec::new();
        let len = write_message(&mut out, &text, &mut rng, 0, "a@x", "b@y", 1, 9);
        assert!(
            out.ends_with(b"\r\n\r\n.\r\n"),
            "headers only, then the dot"
        );
        assert!(len < 300);
    }
}
