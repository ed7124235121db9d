//! Unit tests of `http1` (kept apart so the module stays readable).
use super::*;

fn parse_all(parts: &[&[u8]]) -> (Result<Progress, ParseError>, ResponseParser) {
    let mut p = ResponseParser::new();
    let mut last = Ok(Progress::NeedMore);
    for part in parts {
        last = p.feed(part);
        if !matches!(last, Ok(Progress::NeedMore)) {
            break;
        }
    }
    (last, p)
}

#[test]
fn content_length_in_one_read() {
    let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let (res, p) = parse_all(&[r]);
    assert_eq!(res, Ok(Progress::Complete { consumed: r.len() }));
    assert_eq!(p.body_bytes(), 5);
    assert_eq!(p.head().unwrap().status, 200);
    assert!(p.head().unwrap().keep_alive);
}

#[test]
fn head_split_across_reads_byte_by_byte() {
    let r = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
    let mut p = ResponseParser::new();
    for (i, b) in r.iter().enumerate() {
        let res = p.feed(std::slice::from_ref(b)).unwrap();
        if i + 1 < r.len() {
            assert_eq!(res, Progress::NeedMore, "at byte {i}");
        } else {
            assert_eq!(res, Progress::Complete { consumed: 1 });
        }
    }
    assert_eq!(p.head().unwrap().status, 404);
    assert!(!p.head().unwrap().keep_alive);
}

#[test]
fn chunked_with_extension_and_trailer() {
    let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
    let (res, p) = parse_all(&[&r[..50], &r[50..]]);
    assert_eq!(
        res,
        Ok(Progress::Complete {
            consumed: r.len() - 50
        })
    );
    assert_eq!(p.body_bytes(), 15);
}

#[test]
fn reports_leftover_bytes_as_not_consumed() {
    let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokJUNK";
    let (res, _) = parse_all(&[r]);
    assert_eq!(
        res,
        Ok(Progress::Complete {
            consumed: r.len() - 4
        })
    );
}

#[test]
fn malformed_inputs() {
    for bad in [
        &b"garbage garbage\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
    ] {
        let (res, _) = parse_all(&[bad]);
        assert!(res.is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn until_close_and_early_close() {
    let (res, mut p) = parse_all(&[b"HTTP/1.0 200 OK\r\n\r\nabc"]);
    assert_eq!(res, Ok(Progress::NeedMore));
    assert!(p.until_close());
    assert!(p.finish_at_eof());
    assert_eq!(p.body_bytes(), 3);
    let (_, mut p) = parse_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"]);
    assert!(!p.finish_at_eof());
}

/// Issue 33 item 15: a body after the answer to a HEAD is malformed whether it comes in
/// the head's read or a later one, when the server then closes.
#[test]
fn a_body_after_a_head_answer_is_malformed_however_it_is_split() {
    let head = &b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\n"[..];
    let head_answer = || {
        let mut p = ResponseParser::new();
        p.reset(true);
        p
    };
    let mut p = head_answer();
    let together = [head, b"hello"].concat();
    assert!(matches!(p.feed(&together), Err(ParseError::Malformed(_))));
    let mut p = head_answer();
    assert_eq!(p.feed(head), Ok(Progress::NeedMore));
    assert!(p.until_close());
    assert!(matches!(p.feed(b"hello"), Err(ParseError::Malformed(_))));
    // No body, then the close: a good answer.
    let mut p = head_answer();
    assert_eq!(p.feed(head), Ok(Progress::NeedMore));
    assert!(p.finish_at_eof());
    assert_eq!(p.head().unwrap().status, 200);
    assert_eq!(p.body_bytes(), 0);
    // Kept alive, it is complete at its head (bytes after it belong to no response).
    let mut p = head_answer();
    let kept = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(
        p.feed(kept),
        Ok(Progress::Complete {
            consumed: kept.len()
        })
    );
}

#[test]
fn interim_and_bodiless_responses() {
    let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    let (res, p) = parse_all(&[r]);
    assert_eq!(res, Ok(Progress::Complete { consumed: r.len() }));
    assert_eq!(p.head().unwrap().status, 204);
    let mut p = ResponseParser::new();
    p.reset(true);
    let r = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
    assert_eq!(p.feed(r), Ok(Progress::Complete { consumed: r.len() }));
}

#[test]
fn captures_chunked_bodies_only_when_asked() {
    let r =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let mut p = ResponseParser::new();
    p.capture_body(true);
    assert!(matches!(p.feed(r), Ok(Progress::Complete { .. })));
    assert_eq!(p.body(), b"abcde");
    p.reset(false);
    p.capture_body(false);
    assert!(matches!(p.feed(r), Ok(Progress::Complete { .. })));
    assert!(p.body().is_empty());
}

#[test]
fn lengths_parse_strictly() {
    assert_eq!(parse_length(b" 42 "), Some(42));
    assert_eq!(parse_length(b"0"), Some(0));
    assert_eq!(parse_length(b""), None);
    assert_eq!(parse_length(b"4 2"), None);
    assert_eq!(parse_length(b"-1"), None);
    assert_eq!(parse_length(b"99999999999999999999"), None);
}

/// A 200 with `n` header fields (Content-Length among them) and a 2-byte body.
fn with_headers(n: usize) -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
    for i in 1..n {
        r.extend_from_slice(format!("Set-Cookie: c{i}=v{i}; Path=/\r\n").as_bytes());
    }
    r.extend_from_slice(b"\r\nok");
    r
}

#[test]
fn many_header_fields_are_fine_up_to_the_limit() {
    for n in [63, 64, 65, 255, MAX_HEADERS] {
        let r = with_headers(n);
        let (res, p) = parse_all(&[&r]);
        assert_eq!(
            res,
            Ok(Progress::Complete { consumed: r.len() }),
            "{n} headers"
        );
        assert_eq!(p.body_bytes(), 2);
        // Split across reads too (the head is parsed again from the pending bytes).
        let (res, _) = parse_all(&[&r[..r.len() / 3], &r[r.len() / 3..]]);
        assert_eq!(
            res,
            Ok(Progress::Complete {
                consumed: r.len() - r.len() / 3
            }),
            "{n} headers in two reads"
        );
    }
}

#[test]
fn too_many_header_fields_are_head_too_large_not_malformed() {
    for n in [MAX_HEADERS + 1, 1000] {
        let r = with_headers(n);
        let (res, _) = parse_all(&[&r]);
        assert_eq!(res, Err(ParseError::HeadTooLarge), "{n} headers");
        assert_eq!(res.unwrap_err().kind(), ErrorKind::HeaderTooLarge);
    }
}

#[test]
fn a_head_over_the_byte_limit_is_head_too_large() {
    let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    r.resize(r.len() + MAX_HEAD, b'a');
    r.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
    // In 64 KiB reads, as the worker reads.
    let parts: Vec<&[u8]> = r.chunks(64 * 1024).collect();
    let (res, _) = parse_all(&parts);
    assert_eq!(res, Err(ParseError::HeadTooLarge));
    // All at once as well.
    let (res, _) = parse_all(&[&r]);
    assert_eq!(res, Err(ParseError::HeadTooLarge));
    // Just under the limit is fine.
    let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    r.resize(MAX_HEAD - 64, b'a');
    r.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
    let parts: Vec<&[u8]> = r.chunks(64 * 1024).collect();
    let (res, _) = parse_all(&parts);
    assert!(matches!(res, Ok(Progress::Complete { .. })), "{res:?}");
}

#[test]
fn http10_keep_alive_needs_the_header() {
    let (_, p) = parse_all(&[b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"]);
    assert!(!p.head().unwrap().keep_alive);
    let (_, p) =
        parse_all(&[b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"]);
    assert!(p.head().unwrap().keep_alive);
}
