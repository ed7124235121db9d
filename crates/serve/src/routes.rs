//! The embedded target's pages: which path answers what, with which status and headers.
//! Routing is a pure function of the request head (plus a shutdown flag that cuts `/cpu`
//! short); the server module only carries the answer to the socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, SERVER};
use hyper::{Method, Request, Response, StatusCode, Version};

use crate::body::ResponseBody;

/// The classic http_load / nginx `empty_gif` target: a 1x1 transparent GIF89a, 43 bytes.
/// Built by hand from the GIF89a layout: header, screen descriptor with a 2-colour table,
/// a graphic control extension marking colour 0 transparent, one 1x1 image whose LZW data
/// is clear(4) · pixel 0 · end(5) in 3-bit codes (0x44 0x01), and the trailer.
pub const EMPTY_GIF: &[u8] = &[
    b'G', b'I', b'F', b'8', b'9', b'a', // header
    0x01, 0x00, 0x01, 0x00, // logical screen 1 x 1
    0x80, 0x00, 0x00, // global colour table of 2 entries, background 0, aspect 0
    0x00, 0x00, 0x00, 0xff, 0xff, 0xff, // colours: black, white
    0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, // graphic control: colour 0 transparent
    0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, // image 1 x 1 at 0,0
    0x02, 0x02, 0x44, 0x01, 0x00, // LZW min code size 2, one 2-byte sub-block, end
    0x3b, // trailer
];

/// Largest body `/bytes/N` and `/chunked/N` will send.
pub const MAX_BODY_BYTES: u64 = 1 << 30;
/// Longest busy-work `/cpu/MICROS` will do, in microseconds (10 s).
pub const MAX_CPU_MICROS: u64 = 10_000_000;
/// Longest wait `/sleep/MILLIS` will do, in milliseconds (60 s).
pub const MAX_SLEEP_MILLIS: u64 = 60_000;

/// `Server:` on every response.
const SERVER_NAME: &str = concat!("webtune/", env!("CARGO_PKG_VERSION"));

const INDEX_PAGE: &str = "\
webtune embedded target. Routes:
  /empty.gif     a 43-byte 1x1 transparent GIF (the classic http_load target)
  /bytes/N       N bytes with Content-Length (N up to 1073741824)
  /chunked/N     N bytes with Transfer-Encoding: chunked, in several chunks
  /cpu/US        US microseconds of CPU busy-work on the serving thread, then a short body (up to 10000000)
  /sleep/MS      answer after MS milliseconds without holding a thread (up to 60000)
  /status/CODE   an empty-ish answer with status CODE (200-599)
  /login         GET: a form with a csrf token; POST user, password (secret-USER), csrf: sets sid
  /account       with the sid cookie: a page with a csrf for /reply (else 403)
  /reply         POST csrf (the account page's) with the sid cookie
  /api/me        with the sid cookie: {\"user\":{\"name\":...,\"id\":...}}
GET and HEAD only (POST for /login and /reply). Keep-alive is on (HTTP/1.1; HTTP/1.0 with Connection: keep-alive).
";

/// What the route decided; `After` answers once the delay has passed.
#[derive(Debug)]
pub(crate) enum Reply {
    Now(Response<ResponseBody>),
    After(Duration, Response<ResponseBody>),
}

/// The server-wide facts a route needs.
#[derive(Debug)]
pub(crate) struct RouteContext {
    /// Whether this server keeps connections alive at all (`keepalive_timeout > 0`).
    pub keep_alive: bool,
    /// Set when the server shuts down: `/cpu` stops spinning.
    pub stopping: AtomicBool,
}

/// A parsed path.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Index,
    EmptyGif,
    Bytes(u64),
    Chunked(u64),
    Cpu(Duration),
    Sleep(Duration),
    Status(StatusCode),
    NotFound,
    BadRequest(String),
}

/// Answers one request.
pub(crate) fn respond<B>(req: &Request<B>, ctx: &RouteContext) -> Reply {
    let method = req.method();
    let is_head = method == Method::HEAD;
    if !is_head && method != Method::GET {
        let mut response = text_response(
            StatusCode::METHOD_NOT_ALLOWED,
            Bytes::from_static(b"only GET and HEAD are served here\n"),
        );
        response
            .headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Reply::Now(finish(req, ctx, response));
    }

    let mut delay = None;
    let response = match parse_route(req.uri().path()) {
        Route::EmptyGif => with_type(
            StatusCode::OK,
            ResponseBody::whole(Bytes::from_static(EMPTY_GIF)),
            "image/gif",
        ),
        Route::Index => text_response(StatusCode::OK, Bytes::from_static(INDEX_PAGE.as_bytes())),
        Route::Bytes(len) => with_type(
            StatusCode::OK,
            ResponseBody::sized(len),
            "application/octet-stream",
        ),
        Route::Chunked(len) => with_type(
            StatusCode::OK,
            ResponseBody::chunked(len),
            "application/octet-stream",
        ),
        Route::Cpu(duration) => {
            let (spent, rounds) = burn_cpu(duration, &ctx.stopping);
            text_response(
                StatusCode::OK,
                Bytes::from(format!(
                    "spent {} us of CPU ({rounds} rounds)\n",
                    spent.as_micros()
                )),
            )
        }
        Route::Sleep(duration) => {
            delay = Some(duration);
            text_response(
                StatusCode::OK,
                Bytes::from(format!("slept {} ms\n", duration.as_millis())),
            )
        }
        Route::Status(status) => {
            let body = if matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED) {
                Bytes::new()
            } else {
                Bytes::from(format!(
                    "{} {}\n",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                ))
            };
            text_response(status, body)
        }
        Route::NotFound => text_response(
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"not found: see / for the routes\n"),
        ),
        Route::BadRequest(why) => text_response(StatusCode::BAD_REQUEST, Bytes::from(why)),
    };
    let response = finish(req, ctx, response);
    match delay {
        Some(duration) => Reply::After(duration, response),
        None => Reply::Now(response),
    }
}

/// Parses a path (the query is not part of it) into a route.
fn parse_route(path: &str) -> Route {
    match path {
        "/empty.gif" => return Route::EmptyGif,
        "/" => return Route::Index,
        _ => {}
    }
    let Some((prefix, arg)) = path.strip_prefix('/').and_then(|rest| rest.split_once('/')) else {
        return Route::NotFound;
    };
    let (cap, unit) = match prefix {
        "bytes" | "chunked" => (MAX_BODY_BYTES, "bytes"),
        "cpu" => (MAX_CPU_MICROS, "microseconds"),
        "sleep" => (MAX_SLEEP_MILLIS, "milliseconds"),
        "status" => (599, "a status code"),
        _ => return Route::NotFound,
    };
    let number = match parse_number(arg) {
        Some(n) if n <= cap => n,
        Some(_) if prefix == "status" => 0, // rejected just below with the status message
        Some(n) => {
            return Route::BadRequest(format!(
                "/{prefix}/{n}: at most {cap} {unit} allowed here\n"
            ))
        }
        None => {
            return Route::BadRequest(format!(
                "/{prefix}/{}: expected a whole number of {unit}, e.g. /{prefix}/100\n",
                arg.escape_debug()
            ))
        }
    };
    match prefix {
        "bytes" => Route::Bytes(number),
        "chunked" => Route::Chunked(number),
        "cpu" => Route::Cpu(Duration::from_micros(number)),
        "sleep" => Route::Sleep(Duration::from_millis(number)),
        _ => match u16::try_from(number)
            .ok()
            .filter(|code| (200..=599).contains(code))
            .and_then(|code| StatusCode::from_u16(code).ok())
        {
            Some(status) => Route::Status(status),
            None => Route::BadRequest(format!(
                "/status/{arg}: the status must be between 200 and 599\n"
            )),
        },
    }
}

/// A decimal number made of ASCII digits only (no sign, no spaces), or `None`.
fn parse_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Spins for `duration` doing real arithmetic (an xorshift generator), checking the clock
/// every 256 rounds; returns the time spent and the rounds done. Stops early when the server
/// shuts down.
fn burn_cpu(duration: Duration, stopping: &AtomicBool) -> (Duration, u64) {
    let started = Instant::now();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rounds: u64 = 0;
    loop {
        for _ in 0..256 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
        }
        rounds += 1;
        std::hint::black_box(state);
        let spent = started.elapsed();
        if spent >= duration || stopping.load(Ordering::Relaxed) {
            return (spent, rounds);
        }
    }
}

fn with_type(
    status: StatusCode,
    body: ResponseBody,
    content_type: &'static str,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let mut headers = HeaderMap::with_capacity(4);
    headers.insert(SERVER, HeaderValue::from_static(SERVER_NAME));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    *response.headers_mut() = headers;
    response
}

fn text_response(status: StatusCode, body: Bytes) -> Response<ResponseBody> {
    with_type(
        status,
        ResponseBody::whole(body),
        "text/plain; charset=utf-8",
    )
}

/// HEAD and HTTP/1.0 adjustments. For HEAD the body is dropped and its length announced
/// (hyper would close a HEAD connection whose body length is unknown). An HTTP/1.0 client
/// that asked for keep-alive gets `Connection: keep-alive`, which hyper needs to see in the
/// response to keep a 1.0 connection open; not for bodies of unknown length, which 1.0 can
/// only end by closing.
fn finish<B>(
    req: &Request<B>,
    ctx: &RouteContext,
    mut response: Response<ResponseBody>,
) -> Response<ResponseBody> {
    let known_len = response.body().exact_len();
    if req.method() == Method::HEAD {
        // 204 and 304 carry no Content-Length (RFC 9110 §8.6).
        let may_announce = !matches!(
            response.status(),
            StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
        );
        if let Some(len) = known_len.filter(|_| may_announce) {
            response
                .headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
        *response.body_mut() = ResponseBody::Empty;
    }
    if req.version() == Version::HTTP_10
        && ctx.keep_alive
        && known_len.is_some()
        && asks_for_keep_alive(req.headers())
    {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("keep-alive"));
    }
    response
}

/// Whether a `Connection` header lists the `keep-alive` token.
fn asks_for_keep_alive(headers: &HeaderMap) -> bool {
    headers.get_all(CONNECTION).iter().any(|value| {
        value.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("keep-alive"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_gif_is_a_43_byte_gif89a() {
        assert_eq!(EMPTY_GIF.len(), 43);
        assert!(EMPTY_GIF.starts_with(b"GIF89a"));
        assert_eq!(EMPTY_GIF.last(), Some(&0x3b));
    }

    #[test]
    fn paths_parse_into_routes() {
        assert_eq!(parse_route("/empty.gif"), Route::EmptyGif);
        assert_eq!(parse_route("/"), Route::Index);
        assert_eq!(parse_route("/bytes/0"), Route::Bytes(0));
        assert_eq!(parse_route("/bytes/1073741824"), Route::Bytes(1 << 30));
        assert_eq!(parse_route("/chunked/10"), Route::Chunked(10));
        assert_eq!(
            parse_route("/cpu/250"),
            Route::Cpu(Duration::from_micros(250))
        );
        assert_eq!(
            parse_route("/sleep/5"),
            Route::Sleep(Duration::from_millis(5))
        );
        assert_eq!(
            parse_route("/status/503"),
            Route::Status(StatusCode::from_u16(503).unwrap())
        );
        assert_eq!(parse_route("/nope"), Route::NotFound);
        assert_eq!(parse_route("/nope/1"), Route::NotFound);
        assert_eq!(parse_route("/empty.gif/x"), Route::NotFound);
    }

    #[test]
    fn bad_numbers_and_caps_are_bad_requests() {
        for path in [
            "/bytes/",
            "/bytes/abc",
            "/bytes/+5",
            "/bytes/-1",
            "/bytes/1 ",
            "/bytes/1073741825",
            "/bytes/99999999999999999999999",
            "/chunked/x",
            "/cpu/10000001",
            "/sleep/60001",
            "/status/199",
            "/status/600",
            "/status/70000",
            "/status/99999999999999999999999",
        ] {
            assert!(
                matches!(parse_route(path), Route::BadRequest(_)),
                "{path} gave {:?}",
                parse_route(path)
            );
        }
    }

    #[test]
    fn burn_cpu_stops_when_asked() {
        let stopping = AtomicBool::new(true);
        assert_eq!(burn_cpu(Duration::from_secs(10), &stopping).1, 1);
    }

    #[test]
    fn keep_alive_token_is_found_in_lists() {
        let mut headers = HeaderMap::new();
        headers.insert(CONNECTION, HeaderValue::from_static("Upgrade, Keep-Alive"));
        assert!(asks_for_keep_alive(&headers));
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        assert!(!asks_for_keep_alive(&headers));
    }
}
