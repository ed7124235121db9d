//! HTTP/2 for the engine (`--http2`): the frame layer (`frame`), a sans-I/O client
//! connection with its stream table and flow control (`conn`), HPACK decoding (`hpack`),
//! requests turned into header blocks (`request`), and what a run prepares once for its
//! workers (`H2Setup`). The codec only: the worker that drives many streams per connection
//! over the same transport as HTTP/1 is `worker::h2`, a sibling of HTTP/1.1's.
//!
//! h2 over TLS is chosen by ALPN `h2`; `http://` URLs speak h2c with prior knowledge (the
//! preface straight away, no Upgrade).

pub mod conn;
pub mod frame;
pub mod hpack;
pub mod request;

use request::H2Request;
use std::sync::Arc;

/// What an HTTP/2 run adds to a worker's configuration.
#[derive(Debug, Clone)]
pub struct H2Setup {
    pub streams: usize,
    /// Per planned request: its HTTP/2 form when it never varies (else rendered per use).
    pub fixed: Arc<Vec<Option<H2Request>>>,
    /// https:// (h2 by ALPN) rather than h2c.
    pub tls: bool,
}
