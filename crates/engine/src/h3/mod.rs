//! HTTP/3 over QUIC (`--http3`): what a run prepares once (`H3Setup`: the requests as
//! HTTP/3 heads, the QUIC client config on the run's rustls trust and ALPN `h3`) and a
//! request's exchange and how it fails (`exchange`); the worker that loads with it is
//! `worker::h3`, a sibling of the HTTP/1.1 and HTTP/2 workers. QUIC and HTTP/3 come from
//! quinn, h3 and h3-quinn: pure Rust, on the same rustls + ring as TLS over TCP, so `--cacert`,
//! `--insecure` and `--no-tls-resume` mean the same thing (docs/http3.md says why these
//! crates). The HTTP/1.1 and HTTP/2 workers are untouched: a worker is started as an
//! HTTP/3 one or not at all.

pub(crate) mod exchange;

use crate::plan::PlannedRequest;
use crate::tls::TlsTarget;
use crate::EngineError;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// UDP socket buffers asked for each worker's socket (the kernel caps them at
/// net.core.rmem_max / wmem_max; what it granted is reported). quinn's own docs advise
/// large buffers for throughput; 4 MiB is what quic-go asks for too.
pub(crate) const UDP_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// How long a QUIC connection may stay silent before it is given up (both sides' idle
/// timeouts apply; the smaller wins).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// One request as HTTP/3 sends it.
#[derive(Debug, Clone)]
pub(crate) struct H3Request {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl H3Request {
    /// The request head, built anew (http::Request is not Clone).
    pub fn head(&self) -> http::Request<()> {
        let mut request = http::Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// What every HTTP/3 worker of a run shares.
#[derive(Clone)]
pub(crate) struct H3Setup {
    pub requests: Arc<Vec<H3Request>>,
    /// The rustls config (each worker makes its own quinn config from it, hence its own
    /// session cache).
    pub tls: TlsTarget,
    pub server_name: String,
    pub streams: u32,
    pub zero_rtt: bool,
}

/// Connection-specific headers HTTP/3 forbids (RFC 9114 §4.2), and Host, which becomes
/// `:authority`.
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Prepare a run's requests for HTTP/3: each planned request's HTTP/1.1 bytes (encoded
/// once by `plan`) read back into a head and a body.
pub(crate) fn setup(
    requests: &[PlannedRequest],
    tls: Option<&TlsTarget>,
    streams: u32,
    zero_rtt: bool,
) -> Result<H3Setup, EngineError> {
    let tls = tls.cloned().ok_or_else(|| {
        EngineError::BadLoad("--http3 needs an https:// URL (QUIC always runs TLS 1.3)".into())
    })?;
    let converted = requests
        .iter()
        .map(|r| {
            let bytes = r.fixed_bytes.as_deref().ok_or_else(|| {
                EngineError::BadLoad(
                    "--http3: requests that vary per request (scenario templates) are not \
                     supported yet"
                        .into(),
                )
            })?;
            from_http1(bytes).map_err(|e| EngineError::BadLoad(format!("--http3: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(H3Setup {
        requests: Arc::new(converted),
        server_name: tls.server_name(),
        tls,
        streams: streams.max(1),
        zero_rtt,
    })
}

/// An HTTP/1.1 request (as `plan` encodes it) as an HTTP/3 request.
pub(crate) fn from_http1(bytes: &[u8]) -> Result<H3Request, String> {
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut fields);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
        Err(e) => return Err(format!("bad request head: {e}")),
    };
    let method = http::Method::from_bytes(parsed.method.unwrap_or("GET").as_bytes())
        .map_err(|e| e.to_string())?;
    let path = parsed.path.unwrap_or("/");
    let mut authority = None;
    let mut headers = http::HeaderMap::new();
    for h in parsed.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "host" {
            authority = Some(String::from_utf8_lossy(h.value).into_owned());
        }
        if DROPPED.contains(&name.as_str()) {
            continue;
        }
        let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let value = http::HeaderValue::from_bytes(h.value).map_err(|e| e.to_string())?;
        headers.append(name, value);
    }
    let authority = authority.ok_or("no Host header")?;
    let uri = http::Uri::builder()
        .scheme("https")
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(H3Request {
        method,
        uri,
        headers,
        body: Bytes::copy_from_slice(&bytes[head_len..]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_becomes_an_h3_head_without_connection_headers() {
        let r = from_http1(
            b"POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nConnection: close\r\n\
              User-Agent: webtune\r\nContent-Length: 2\r\n\r\nhi",
        )
        .unwrap();
        assert_eq!(r.method, http::Method::POST);
        assert_eq!(r.uri.to_string(), "https://127.0.0.1:8443/a?b=1");
        assert!(r.headers.get("connection").is_none());
        assert!(r.headers.get("host").is_none());
        assert_eq!(r.headers["user-agent"], "webtune");
        assert_eq!(&r.body[..], b"hi");
    }
}
