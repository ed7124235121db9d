//! Encoding one request of a scenario into the bytes sent: request line, default and own
//! headers, Content-Length, body; rendered from its templates without allocating.

use super::template::push_decimal;
use super::template::Ctx;
use super::RequestDef;
use crate::rng::Rng;

/// Builds the full HTTP/1.x request bytes for one request of the scenario into `out`
/// (cleared first): request line, Host (`host_header`), User-Agent webtune/VERSION, Accept
/// */*, `Connection: close` when not keep-alive (`keep-alive` for HTTP/1.0 with keep-alive),
/// Content-Length when there is a body, the request's own headers (a request's Host,
/// User-Agent, Accept or Connection replaces the default), an empty line, the body. All
/// `{csv:...}` placeholders of one file take the same row within one request.
pub fn encode_into(
    def: &RequestDef,
    host_header: &str,
    keepalive: bool,
    http10: bool,
    rng: &mut Rng,
    seq: u64,
    out: &mut Vec<u8>,
) {
    encode(
        def,
        host_header,
        keepalive,
        http10,
        rng,
        seq,
        None,
        b"",
        out,
    );
}

/// `encode_into` for a journey's step: its `{var:...}` and `{user:...}` read `ctx`, and
/// `cookies` (the user's jar for this path, `name=value; ...`; empty for none) goes into a
/// `Cookie` header (joined to the step's own `Cookie` header when it has one).
#[allow(clippy::too_many_arguments)]
pub fn encode_step_into(
    def: &RequestDef,
    host_header: &str,
    keepalive: bool,
    http10: bool,
    rng: &mut Rng,
    seq: u64,
    ctx: &Ctx,
    cookies: &[u8],
    out: &mut Vec<u8>,
) {
    encode(
        def,
        host_header,
        keepalive,
        http10,
        rng,
        seq,
        Some(ctx),
        cookies,
        out,
    );
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn encode(
    def: &RequestDef,
    host_header: &str,
    keepalive: bool,
    http10: bool,
    rng: &mut Rng,
    seq: u64,
    ctx: Option<&Ctx>,
    cookies: &[u8],
    out: &mut Vec<u8>,
) {
    out.clear();
    let uses_csv =
        def.path.has_csv || def.body.has_csv || def.headers.iter().any(|(_, v)| v.has_csv);
    let row_draw = if uses_csv { rng.next_u64() } else { 0 };
    // A templated body is rendered first to learn its length, then rotated behind the head.
    let dynamic_body = !def.body.is_static();
    let body_len = if dynamic_body {
        def.body.render_with(rng, seq, row_draw, ctx, out);
        out.len()
    } else {
        def.body.literal_len()
    };
    out.extend_from_slice(def.method.as_bytes());
    out.push(b' ');
    def.path.render_with(rng, seq, row_draw, ctx, out);
    out.extend_from_slice(if http10 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    if !def.has_header("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host_header.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !def.has_header("user-agent") {
        out.extend_from_slice(
            concat!("User-Agent: webtune/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
        );
    }
    if !def.has_header("accept") {
        out.extend_from_slice(b"Accept: */*\r\n");
    }
    if !def.has_header("connection") {
        match (keepalive, http10) {
            (false, _) => out.extend_from_slice(b"Connection: close\r\n"),
            (true, true) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            (true, false) => {}
        }
    }
    if body_len > 0 {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, body_len as u64);
        out.extend_from_slice(b"\r\n");
    }
    let own_cookie = !cookies.is_empty() && def.has_header("cookie");
    if !cookies.is_empty() && !own_cookie {
        out.extend_from_slice(b"Cookie: ");
        out.extend_from_slice(cookies);
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &def.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        value.render_with(rng, seq, row_draw, ctx, out);
        if own_cookie && name.eq_ignore_ascii_case("cookie") {
            out.extend_from_slice(b"; ");
            out.extend_from_slice(cookies);
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if dynamic_body {
        out.rotate_left(body_len);
    } else {
        def.body.render_with(rng, seq, row_draw, ctx, out);
    }
}
