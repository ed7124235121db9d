//! HTTP/2 for the engine (`--http2`): the frame layer (`frame`), a sans-I/O client
//! connection with its stream table and flow control (`conn`), HPACK decoding (`hpack`),
//! requests turned into header blocks (`request`), and the worker loop that drives many
//! streams per connection over the same transport as HTTP/1 (`worker`).
//!
//! h2 over TLS is chosen by ALPN `h2`; `http://` URLs speak h2c with prior knowledge (the
//! preface straight away, no Upgrade).

pub mod conn;
pub mod frame;
pub mod hpack;
pub mod request;
pub mod worker;
