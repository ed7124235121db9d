//! TLS settings for a run: the rustls client configuration (ring provider, TLS 1.2 and 1.3),
//! which certificates are trusted (the system's roots, `--cacert FILE`, or none checked with
//! `--insecure`), session resumption (on unless `--no-tls-resume`), ALPN, SNI from the URL's
//! host — and how a TLS failure is counted (certificate, handshake, alert).
//!
//! A certificate in the `--cacert` file that is itself the server's certificate is trusted
//! when its name matches, even with `CA:TRUE` (what `openssl req -x509` makes and OpenSSL
//! clients such as curl accept; webpki alone refuses a CA used as an end entity) — but only
//! within its validity period: an expired or not-yet-valid one is refused as curl does.
//!
//! rustls does no I/O of its own; `transport` moves its records over the worker's sockets.

use crate::EngineError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, Resumption, WebPkiServerVerifier};
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore};
use rustls::{SignatureScheme, ALL_VERSIONS};
use std::fmt;
use std::io;
use std::sync::Arc;
use webtune_model::{ErrorKind, TlsOptions};

/// What every connection of a run shares: trust, resumption, ALPN, the server name.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    provider: Arc<CryptoProvider>,
    trust: Trust,
    resume: bool,
    alpn: Vec<Vec<u8>>,
    server_name: ServerName<'static>,
}

/// Which server certificates are accepted.
#[derive(Debug, Clone)]
enum Trust {
    /// `--insecure`.
    Any,
    /// The system's roots.
    System(Arc<RootCertStore>),
    /// `--cacert FILE`: its certificates as roots, and as the server's own certificate.
    File(Arc<RootCertStore>, Arc<Vec<CertificateDer<'static>>>),
}

/// One thread's way to open TLS connections: its own config, hence its own session cache
/// (no lock shared with other workers on the connect path).
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl Connector {
    /// A client connection ready to send its ClientHello.
    pub fn connection(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(Arc::clone(&self.config), self.server_name.clone())
    }
}

impl TlsTarget {
    /// Check the options and load the trusted certificates. `host` is the URL's host (SNI
    /// and the name the certificate must carry); `alpn` the protocols offered, preferred
    /// first.
    pub fn new(opts: &TlsOptions, host: &str, alpn: &[&[u8]]) -> Result<TlsTarget, EngineError> {
        let server_name =
            ServerName::try_from(host.to_string()).map_err(|e| EngineError::BadUrl {
                url: host.to_string(),
                reason: format!("not a TLS server name: {e}"),
            })?;
        let trust = match (&opts.cacert, opts.insecure) {
            (_, true) => Trust::Any,
            (Some(path), false) => {
                let certs = certs_from_file(path)?;
                let mut roots = RootCertStore::empty();
                for cert in &certs {
                    roots.add(cert.clone()).map_err(|e| EngineError::CaCert {
                        path: path.clone(),
                        reason: format!("unusable certificate: {e}"),
                    })?;
                }
                Trust::File(Arc::new(roots), Arc::new(certs))
            }
            (None, false) => Trust::System(Arc::new(system_roots())),
        };
        let target = TlsTarget {
            provider: Arc::new(ring::default_provider()),
            trust,
            resume: !opts.no_resume,
            alpn: alpn.iter().map(|p| p.to_vec()).collect(),
            server_name,
        };
        // Build one config now so that a bad combination fails before the run, not per worker.
        target.config()?;
        Ok(target)
    }

    fn config(&self) -> Result<ClientConfig, EngineError> {
        let builder = ClientConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_protocol_versions(ALL_VERSIONS)
            .map_err(|e| EngineError::Tls(e.to_string()))?;
        let algorithms = self.provider.signature_verification_algorithms;
        let mut config = match &self.trust {
            Trust::System(roots) => builder.with_root_certificates(Arc::clone(roots)),
            Trust::Any => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { algorithms })),
            Trust::File(roots, certs) => {
                let webpki = WebPkiServerVerifier::builder_with_provider(
                    Arc::clone(roots),
                    Arc::clone(&self.provider),
                )
                .build()
                .map_err(|e| EngineError::Tls(e.to_string()))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(CaFileVerifier {
                        webpki,
                        certs: Arc::clone(certs),
                    }))
            }
        }
        .with_no_client_auth();
        config.alpn_protocols = self.alpn.clone();
        if !self.resume {
            config.resumption = Resumption::disabled();
        }
        Ok(config)
    }

    /// `--http3`: the rustls config QUIC runs its TLS 1.3 handshake with (quinn takes the
    /// config itself); `early_data` lets a resumed session send 0-RTT (`--0rtt`).
    pub(crate) fn quic_config(&self, early_data: bool) -> Result<ClientConfig, EngineError> {
        let mut config = self.config()?;
        config.enable_early_data = early_data;
        Ok(config)
    }

    /// The server name the certificate must carry (SNI).
    pub(crate) fn server_name(&self) -> String {
        self.server_name.to_str().into_owned()
    }

    /// A connector with its own session cache (one per worker thread).
    pub fn connector(&self) -> Result<Connector, EngineError> {
        Ok(Connector {
            config: Arc::new(self.config()?),
            server_name: self.server_name.clone(),
        })
    }
}

/// The PEM certificates in `path` (`--cacert`).
fn certs_from_file(path: &str) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let bad = |reason: String| EngineError::CaCert {
        path: path.to_string(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(certs)
}

/// `--cacert`: webpki's checks against the file's certificates; failing those, a server
/// certificate that is one of the file's own is accepted when it names the server and is
/// within its validity period (webpki checks the dates first, so a refusal for the dates
/// stands).
#[derive(Debug)]
struct CaFileVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    certs: Arc<Vec<CertificateDer<'static>>>,
}

impl ServerCertVerifier for CaFileVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused = match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(e) => e,
        };
        if outside_validity(&refused)
            || !self.certs.iter().any(|c| c.as_ref() == end_entity.as_ref())
        {
            return Err(refused);
        }
        verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Is this refusal about the certificate's dates (expired, not yet valid, or a validity
/// period that ends before it begins, which rustls reports as expired)?
fn outside_validity(refused: &rustls::Error) -> bool {
    use rustls::CertificateError as C;
    matches!(
        refused,
        rustls::Error::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. }
        )
    )
}

/// The system's trusted roots; those that do not parse are left out. With none, every
/// handshake fails with a certificate error, which the report names.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(found.certs);
    roots
}

/// `--insecure`: any certificate is accepted; the handshake's signatures are still checked
/// (the work a real client does stays in the measurement).
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A TLS failure, carried inside an `io::Error` through the transport, with the error kind
/// it counts as.
#[derive(Debug)]
pub struct TlsFailure {
    pub kind: ErrorKind,
    pub detail: String,
    /// The server refused every protocol offered by ALPN (a `no_application_protocol`
    /// alert, RFC 7301 §3.2): with `--http2`, it does not offer h2.
    pub alpn_refused: bool,
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.describe(), self.detail)
    }
}

impl std::error::Error for TlsFailure {}

/// The `io::Error` for a rustls error; `handshaking` tells a failed handshake from a
/// protocol error afterwards (counted as a malformed response).
pub fn io_error(e: &rustls::Error, handshaking: bool) -> io::Error {
    let kind = match e {
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::UnsupportedNameType => ErrorKind::TlsCertificate,
        rustls::Error::AlertReceived(_) => ErrorKind::TlsAlert,
        _ if handshaking => ErrorKind::TlsHandshake,
        _ => ErrorKind::Malformed,
    };
    let alpn_refused = matches!(
        e,
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
    );
    io::Error::other(TlsFailure {
        kind,
        detail: e.to_string(),
        alpn_refused,
    })
}

/// An `io::Error` that counts as `kind`.
pub fn failure(kind: ErrorKind, detail: String) -> io::Error {
    io::Error::other(TlsFailure {
        kind,
        detail,
        alpn_refused: false,
    })
}

/// The error kind a TLS failure counts as; None for plain I/O errors.
pub fn failure_kind(e: &io::Error) -> Option<ErrorKind> {
    tls_failure(e).map(|f| f.kind)
}

/// Did the server refuse every protocol offered by ALPN (`TlsFailure::alpn_refused`)?
pub fn alpn_refused(e: &io::Error) -> bool {
    tls_failure(e).is_some_and(|f| f.alpn_refused)
}

fn tls_failure(e: &io::Error) -> Option<&TlsFailure> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TlsFailure>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_their_kind_through_io_errors() {
        let e = io_error(
            &rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
            true,
        );
        assert_eq!(failure_kind(&e), Some(ErrorKind::TlsCertificate));
        let e = io_error(
            &rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
            true,
        );
        assert_eq!(failure_kind(&e), Some(ErrorKind::TlsAlert));
        assert!(!alpn_refused(&e));
        let e = io_error(
            &rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol),
            true,
        );
        assert_eq!(failure_kind(&e), Some(ErrorKind::TlsAlert));
        assert!(alpn_refused(&e));
        let e = io_error(&rustls::Error::DecryptError, true);
        assert_eq!(failure_kind(&e), Some(ErrorKind::TlsHandshake));
        let e = io_error(&rustls::Error::DecryptError, false);
        assert_eq!(failure_kind(&e), Some(ErrorKind::Malformed));
        assert_eq!(failure_kind(&io::Error::other("x")), None);
    }

    #[test]
    fn a_bad_cacert_is_refused_in_one_line() {
        let opts = |path: &str| TlsOptions {
            cacert: Some(path.into()),
            ..TlsOptions::default()
        };
        let e = TlsTarget::new(&opts("/nonexistent/ca.pem"), "localhost", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--cacert") && e.contains("/nonexistent/ca.pem"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let e = TlsTarget::new(&opts(path.to_str().unwrap()), "localhost", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
    }

    /// A self-signed certificate made by the openssl CLI as the lab makes them (valid
    /// from now for 30 days, CA:TRUE), as a `--cacert` verifier and the certificate.
    fn self_signed() -> (CaFileVerifier, CertificateDer<'static>) {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let status = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .arg("ec_paramgen_curve:P-256")
            .args(["-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext"])
            .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
            .arg("-keyout")
            .arg(dir.path().join("key.pem"))
            .arg("-out")
            .arg(&cert)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success());
        let opts = TlsOptions {
            cacert: Some(cert.display().to_string()),
            ..TlsOptions::default()
        };
        let target = TlsTarget::new(&opts, "localhost", &[]).unwrap();
        let Trust::File(roots, certs) = &target.trust else {
            panic!("--cacert trusts its file")
        };
        let verifier = CaFileVerifier {
            webpki: WebPkiServerVerifier::builder_with_provider(
                Arc::clone(roots),
                Arc::clone(&target.provider),
            )
            .build()
            .unwrap(),
            certs: Arc::clone(certs),
        };
        let der = certs[0].clone();
        (verifier, der)
    }

    #[test]
    fn a_self_signed_cacert_counts_only_within_its_dates() {
        let (verifier, cert) = self_signed();
        let name = ServerName::try_from("localhost").unwrap();
        let at = |offset_s: i64| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            UnixTime::since_unix_epoch(std::time::Duration::from_secs((now + offset_s) as u64))
        };
        let verify = |now| verifier.verify_server_cert(&cert, &[], &name, &[], now);
        assert!(verify(at(0)).is_ok(), "valid today");
        let other = ServerName::try_from("example.com").unwrap();
        assert!(verifier
            .verify_server_cert(&cert, &[], &other, &[], at(0))
            .is_err());
        for (offset_s, when) in [(40 * 86_400, "expired"), (-86_400, "not yet valid")] {
            let e = verify(at(offset_s)).expect_err(when);
            assert!(outside_validity(&e), "{when}: {e:?}");
            let counted = failure_kind(&io_error(&e, true));
            assert_eq!(counted, Some(ErrorKind::TlsCertificate), "{when}");
        }
    }

    #[test]
    fn insecure_and_system_roots_build() {
        let insecure = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let t = TlsTarget::new(&insecure, "127.0.0.1", &[b"http/1.1"]).unwrap();
        t.connector().unwrap().connection().unwrap();
        TlsTarget::new(&TlsOptions::default(), "localhost", &[]).unwrap();
    }
}
