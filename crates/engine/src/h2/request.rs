//! A request for HTTP/2: the HTTP/1.1 bytes the plan (or a scenario) renders, turned into an
//! HPACK header block and a body. The block uses only the static table and literals without
//! indexing (RFC 7541 §6.1, §6.2.2), so it holds no connection state: a request that never
//! varies is encoded once for the whole run, and sending it is one copy per stream.
//! Connection-specific fields (Connection, Keep-Alive, Host, Transfer-Encoding, …) are left
//! out or mapped (Host becomes `:authority`), as RFC 9113 §8.2.2 asks.

use std::sync::Arc;

/// One request ready for any HTTP/2 connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Request {
    pub block: Arc<[u8]>,
    pub body: Arc<[u8]>,
}

/// The names of RFC 7541's static table (Appendix A), index 1 first.
const STATIC_NAMES: [&str; 61] = [
    ":authority",
    ":method",
    ":method",
    ":path",
    ":path",
    ":scheme",
    ":scheme",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "accept",
    "access-control-allow-origin",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-range",
    "content-type",
    "cookie",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "link",
    "location",
    "max-forwards",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "refresh",
    "retry-after",
    "server",
    "set-cookie",
    "strict-transport-security",
    "transfer-encoding",
    "user-agent",
    "vary",
    "via",
    "www-authenticate",
];

/// Fields that belong to one HTTP/1 connection, never sent over HTTP/2.
const CONNECTION_FIELDS: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Why an HTTP/1 request cannot be sent as HTTP/2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the request could not be read as HTTP/1.1: {0}")]
    Unreadable(String),
    #[error("a chunked request body cannot be sent over HTTP/2 here; give the body a length")]
    Chunked,
}

/// HPACK integer (§5.1) with an `n`-bit prefix whose high bits are `first`.
fn integer(out: &mut Vec<u8>, first: u8, n: u8, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// A string literal without Huffman coding (§5.2).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Append one field: fully indexed when the static table has the pair, else a literal
/// without indexing, its name indexed when the table has the name.
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let pair = match (name, value) {
        (b":method", b"GET") => Some(2),
        (b":method", b"POST") => Some(3),
        (b":path", b"/") => Some(4),
        (b":scheme", b"http") => Some(6),
        (b":scheme", b"https") => Some(7),
        _ => None,
    };
    if let Some(index) = pair {
        return integer(out, 0x80, 7, index);
    }
    match STATIC_NAMES.iter().position(|n| n.as_bytes() == name) {
        Some(i) => integer(out, 0x00, 4, i + 1),
        None => {
            out.push(0x00);
            string(out, name);
        }
    }
    string(out, value);
}

/// Turn the HTTP/1.1 request in `http1` into an HTTP/2 header block and body.
pub fn from_http1(http1: &[u8], tls: bool) -> Result<H2Request, RequestError> {
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut fields);
    let head_len = match req.parse(http1) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err(RequestError::Unreadable("incomplete".into())),
        Err(e) => return Err(RequestError::Unreadable(e.to_string())),
    };
    let method = req.method.unwrap_or("GET");
    let path = req.path.unwrap_or("/");
    let authority = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value)
        .unwrap_or(b"");
    let mut block = Vec::with_capacity(64 + head_len);
    encode_field(&mut block, b":method", method.as_bytes());
    encode_field(&mut block, b":scheme", if tls { b"https" } else { b"http" });
    encode_field(&mut block, b":authority", authority);
    encode_field(&mut block, b":path", path.as_bytes());
    let mut name = Vec::new();
    for h in req.headers.iter() {
        name.clear();
        name.extend(h.name.bytes().map(|b| b.to_ascii_lowercase()));
        let lower = std::str::from_utf8(&name).unwrap_or("");
        if lower == "transfer-encoding" && !h.value.eq_ignore_ascii_case(b"identity") {
            return Err(RequestError::Chunked);
        }
        if CONNECTION_FIELDS.contains(&lower) || (lower == "te" && h.value != b"trailers") {
            continue;
        }
        encode_field(&mut block, &name, h.value);
    }
    Ok(H2Request {
        block: block.into(),
        body: http1.get(head_len..).unwrap_or(&[]).into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_becomes_a_header_block_hpack_decodes() {
        let h1 = b"POST /a?b=1 HTTP/1.1\r\nHost: example.org:8443\r\nConnection: keep-alive\r\n\
                   User-Agent: webtune\r\nX-Long-Name: v\r\nContent-Length: 3\r\n\r\nabc";
        let r = from_http1(h1, true).unwrap();
        assert_eq!(&r.body[..], b"abc");
        let decoded = loona_hpack::Decoder::new().decode(&r.block).unwrap();
        let fields: Vec<(&[u8], &[u8])> = decoded
            .iter()
            .map(|(n, v)| (n.as_slice(), v.as_slice()))
            .collect();
        assert_eq!(
            fields,
            vec![
                (&b":method"[..], &b"POST"[..]),
                (b":scheme", b"https"),
                (b":authority", b"example.org:8443"),
                (b":path", b"/a?b=1"),
                (b"user-agent", b"webtune"),
                (b"x-long-name", b"v"),
                (b"content-length", b"3"),
            ]
        );
    }

    #[test]
    fn long_values_use_multi_byte_lengths() {
        let value = vec![b'x'; 300];
        let mut block = Vec::new();
        encode_field(&mut block, b"cookie", &value);
        let decoded = loona_hpack::Decoder::new().decode(&block).unwrap();
        assert_eq!(decoded, vec![(b"cookie".to_vec(), value)]);
    }

    #[test]
    fn chunked_bodies_are_refused() {
        let h1 = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(from_http1(h1, false), Err(RequestError::Chunked));
    }
}
