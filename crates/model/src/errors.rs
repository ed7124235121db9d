//! Error kinds: every way a request can fail, each counted apart and named in reports.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why one request failed. The names are the JSON keys and the report labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server actively refused the TCP connection (RST to our SYN: nothing listens).
    ConnectRefused,
    /// The TCP connection was not established within `--connect-timeout`.
    ConnectTimeout,
    /// No local address or port was free for the connection (EADDRNOTAVAIL: the ephemeral
    /// port range is used up, or an IPv6 target with IPv6 off).
    ConnectNoLocalAddress,
    /// Any other failure to connect (unreachable network, ...).
    ConnectOther,
    /// The connection was reset (ECONNRESET / EPIPE) while sending or receiving.
    Reset,
    /// No complete response within `--timeout` after the request was sent.
    RequestTimeout,
    /// The server closed the connection before a complete response arrived.
    ClosedEarly,
    /// The response could not be parsed: bad status line, bad header, bad chunk size,
    /// or bytes after the end of the body.
    Malformed,
    /// The response head exceeded the parser's limits (`MAX_RESPONSE_HEADERS` fields or
    /// `MAX_RESPONSE_HEAD_BYTES`), about what a browser accepts.
    HeaderTooLarge,
    /// A complete response whose status is not among the expected ones.
    UnexpectedStatus,
    /// A complete response whose body lacks the scenario's `body_contains` text.
    BodyCheck,
    /// TLS: the server's certificate was refused (unknown issuer, wrong name, expired, ...).
    TlsCertificate,
    /// TLS: the handshake failed or timed out (the server does not speak TLS, no common
    /// version or cipher, a protocol error, silence after the ClientHello).
    TlsHandshake,
    /// TLS: the server sent a fatal alert.
    TlsAlert,
    /// HTTP/2: the server reset the stream (RST_STREAM, e.g. REFUSED_STREAM).
    H2StreamReset,
    /// HTTP/2: the server sent GOAWAY with an error code while the stream was open, or
    /// one that left the stream unprocessed.
    H2Goaway,
    /// HTTP/2: the server does not speak it there. Over TLS it did not agree to `h2` by
    /// ALPN (picked `http/1.1` or nothing, or refused the offer with an alert); over h2c
    /// (`http://`) it answered the connection preface in HTTP/1.1.
    H2NotNegotiated,
    /// QUIC: the handshake failed or did not finish within `--connect-timeout` (nothing
    /// answers on the UDP port, the server refused the connection, no common ALPN).
    QuicHandshake,
    /// QUIC: the server speaks no QUIC version the client offers.
    QuicVersionNegotiation,
    /// HTTP/3: the server reset the request stream (`http3.stream_resets` has the codes).
    H3StreamReset,
    /// QUIC: the connection was closed with an error code (CONNECTION_CLOSE, transport or
    /// application; `http3.connection_closes` has the codes) while the request was open.
    QuicConnectionClose,
    /// QUIC: the connection went silent past the idle timeout while the request was open.
    QuicIdleTimeout,
    /// A journey step's `extract` found nothing in the response (the user's journey ends).
    Extract,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; KINDS] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ConnectNoLocalAddress,
        ErrorKind::ConnectOther,
        ErrorKind::Reset,
        ErrorKind::RequestTimeout,
        ErrorKind::ClosedEarly,
        ErrorKind::Malformed,
        ErrorKind::HeaderTooLarge,
        ErrorKind::UnexpectedStatus,
        ErrorKind::BodyCheck,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsHandshake,
        ErrorKind::TlsAlert,
        ErrorKind::H2StreamReset,
        ErrorKind::H2Goaway,
        ErrorKind::H2NotNegotiated,
        ErrorKind::QuicHandshake,
        ErrorKind::QuicVersionNegotiation,
        ErrorKind::H3StreamReset,
        ErrorKind::QuicConnectionClose,
        ErrorKind::QuicIdleTimeout,
        ErrorKind::Extract,
    ];

    /// Stable snake_case name (the JSON key).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ConnectNoLocalAddress => "connect_no_local_address",
            ErrorKind::ConnectOther => "connect_other",
            ErrorKind::Reset => "reset",
            ErrorKind::RequestTimeout => "request_timeout",
            ErrorKind::ClosedEarly => "closed_early",
            ErrorKind::Malformed => "malformed",
            ErrorKind::HeaderTooLarge => "header_too_large",
            ErrorKind::UnexpectedStatus => "unexpected_status",
            ErrorKind::BodyCheck => "body_check",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsHandshake => "tls_handshake",
            ErrorKind::TlsAlert => "tls_alert",
            ErrorKind::H2StreamReset => "h2_stream_reset",
            ErrorKind::H2Goaway => "h2_goaway",
            ErrorKind::H2NotNegotiated => "h2_not_negotiated",
            ErrorKind::QuicHandshake => "quic_handshake",
            ErrorKind::QuicVersionNegotiation => "quic_version_negotiation",
            ErrorKind::H3StreamReset => "h3_stream_reset",
            ErrorKind::QuicConnectionClose => "quic_connection_close",
            ErrorKind::QuicIdleTimeout => "quic_idle_timeout",
            ErrorKind::Extract => "extract",
        }
    }

    /// A phrase a person reads in a report.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect refused",
            ErrorKind::ConnectTimeout => "connect timeout",
            ErrorKind::ConnectNoLocalAddress => "no local address/port free (EADDRNOTAVAIL)",
            ErrorKind::ConnectOther => "connect failed (other)",
            ErrorKind::Reset => "connection reset",
            ErrorKind::RequestTimeout => "request timeout",
            ErrorKind::ClosedEarly => "closed before a complete response",
            ErrorKind::Malformed => "malformed response",
            ErrorKind::HeaderTooLarge => HEADER_TOO_LARGE,
            ErrorKind::UnexpectedStatus => "unexpected status",
            ErrorKind::BodyCheck => "body check failed",
            ErrorKind::TlsCertificate => "TLS certificate refused",
            ErrorKind::TlsHandshake => "TLS handshake failed",
            ErrorKind::TlsAlert => "TLS alert from the server",
            ErrorKind::H2StreamReset => "HTTP/2 stream reset by the server",
            ErrorKind::H2Goaway => "HTTP/2 GOAWAY from the server",
            ErrorKind::H2NotNegotiated => {
                "server did not agree to HTTP/2 (ALPN, or an HTTP/1.1 answer to h2c)"
            }
            ErrorKind::QuicHandshake => "QUIC handshake failed",
            ErrorKind::QuicVersionNegotiation => "no common QUIC version",
            ErrorKind::H3StreamReset => "HTTP/3 stream reset by the server",
            ErrorKind::QuicConnectionClose => "QUIC connection closed with an error",
            ErrorKind::QuicIdleTimeout => "QUIC connection idle timeout",
            ErrorKind::Extract => "journey step extracted nothing",
        }
    }

    /// What a user can do about this kind, where webtune knows (printed once under the
    /// kind's count in the text report).
    pub fn hint(self) -> Option<&'static str> {
        match self {
            ErrorKind::TlsCertificate => Some(
                "trust the server's certificate or its CA with --cacert FILE (PEM), \
                 or skip the check with --insecure",
            ),
            ErrorKind::H2NotNegotiated => Some(
                "https://: the server did not choose h2 by ALPN: turn HTTP/2 on in it (nginx \
                 `listen … ssl http2`, Apache `Protocols h2 http/1.1`); http:// (h2c): the \
                 server answered HTTP/1.1: it does not speak h2c (use https://, or a port \
                 that speaks h2c)",
            ),
            ErrorKind::QuicHandshake => Some(
                "is the server listening for HTTP/3 on that UDP port (nginx `listen … quic`, \
                 Caddy `protocols h3`)? a firewall may drop UDP",
            ),
            _ => None,
        }
    }

    /// True for kinds where a complete response arrived (it also counts as a response).
    pub fn has_response(self) -> bool {
        matches!(
            self,
            ErrorKind::UnexpectedStatus | ErrorKind::BodyCheck | ErrorKind::Extract
        )
    }

    /// True for failures to establish a connection (ab's "Connect" failures).
    pub fn is_connect(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::ConnectNoLocalAddress
                | ErrorKind::ConnectOther
        )
    }

    /// True for TLS failures (certificate, handshake, alert; QUIC's handshake).
    pub fn is_tls(self) -> bool {
        matches!(
            self,
            ErrorKind::TlsCertificate
                | ErrorKind::TlsHandshake
                | ErrorKind::TlsAlert
                | ErrorKind::QuicHandshake
                | ErrorKind::QuicVersionNegotiation
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How many error kinds there are.
pub const KINDS: usize = 23;

/// Most header fields a response head may have before it counts as `HeaderTooLarge`.
pub const MAX_RESPONSE_HEADERS: usize = 256;
/// Most bytes a response head (status line and headers) may have, likewise.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 256 * 1024;
/// `HeaderTooLarge`'s report phrase, with the limits in it.
const HEADER_TOO_LARGE: &str = "response header too large (over 256 fields or 256 KiB)";

/// A fixed-size counter per error kind: cheap to bump on the hot path, merged at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts([u64; KINDS]);

impl ErrorCounts {
    #[inline]
    pub fn add(&mut self, kind: ErrorKind) {
        self.0[kind.index()] += 1;
    }

    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind.index()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    /// The kinds that occurred, with their counts, in declaration order.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .into_iter()
            .map(|k| (k, self.get(k)))
            .filter(|(_, n)| *n > 0)
    }

    /// The kinds that occurred as "193 connect refused, 2 request timeout" (one line's
    /// worth; empty when none).
    pub fn summary(&self) -> String {
        self.nonzero()
            .map(|(kind, n)| format!("{n} {}", kind.describe()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Difference since an earlier snapshot of the same counters.
    pub fn since(&self, earlier: &ErrorCounts) -> ErrorCounts {
        let mut out = ErrorCounts::default();
        for i in 0..KINDS {
            out.0[i] = self.0[i].saturating_sub(earlier.0[i]);
        }
        out
    }
}

/// Serialised as a map that always carries every kind (0 when none), so consumers can rely
/// on the keys being present.
impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: BTreeMap<&str, u64> = ErrorKind::ALL
            .into_iter()
            .map(|k| (k.name(), self.get(k)))
            .collect();
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ErrorCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map: BTreeMap<ErrorKind, u64> = BTreeMap::deserialize(d)?;
        let mut out = ErrorCounts::default();
        for (k, v) in map {
            out.0[k.index()] = v;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip_with_every_key() {
        let mut c = ErrorCounts::default();
        c.add(ErrorKind::Reset);
        c.add(ErrorKind::Reset);
        c.add(ErrorKind::Malformed);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["reset"], 2);
        assert_eq!(json["connect_refused"], 0);
        assert_eq!(json.as_object().unwrap().len(), ErrorKind::ALL.len());
        let back: ErrorCounts = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.total(), 3);
    }

    #[test]
    fn header_limit_phrase_names_the_limits() {
        let phrase = ErrorKind::HeaderTooLarge.describe();
        assert!(phrase.contains(&format!("{MAX_RESPONSE_HEADERS} fields")));
        assert!(phrase.contains(&format!("{} KiB", MAX_RESPONSE_HEAD_BYTES / 1024)));
    }

    #[test]
    fn older_results_without_newer_kinds_still_read() {
        let back: ErrorCounts = serde_json::from_str(r#"{"reset": 2}"#).unwrap();
        assert_eq!(back.get(ErrorKind::Reset), 2);
        assert_eq!(back.get(ErrorKind::HeaderTooLarge), 0);
    }

    #[test]
    fn names_match_serde() {
        for k in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
    }
}
