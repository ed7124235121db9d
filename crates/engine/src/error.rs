//! Errors that stop a run before it starts. Each message says what was wrong and what to do.

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("malformed URL {url:?}: {reason} (expected e.g. http://127.0.0.1:8080/path)")]
    BadUrl { url: String, reason: String },
    #[error("bad SMTP server {target:?}: {reason} (expected HOST[:PORT], e.g. 127.0.0.1:25)")]
    BadSmtpTarget { target: String, reason: String },
    #[error("{scheme}:// is not supported: webtune speaks http:// and https://")]
    UnsupportedScheme { scheme: String },
    #[error(
        "cannot resolve host {host:?}: {reason} (check the name, or pass --connect-to IP:PORT)"
    )]
    Resolve { host: String, reason: String },
    #[error("bad --connect-to address {addr:?}: expected IP:PORT, e.g. 127.0.0.1:8080")]
    BadConnectTo { addr: String },
    #[error("bad header {header:?}: {reason}")]
    BadHeader { header: String, reason: String },
    #[error("bad method {method:?}: a method is a token such as GET or POST")]
    BadMethod { method: String },
    #[error("{what} must be at least 1")]
    Zero { what: &'static str },
    #[error(
        "{connections} connections need about {needed} open files but the limit is {limit}: \
         raise it with `ulimit -n {needed}` (or lower -c)"
    )]
    FileLimit {
        connections: u64,
        needed: u64,
        limit: u64,
    },
    #[error(
        "{connections} connections need about {needed} open files but the hard limit is \
         {hard}: lower -c to at most {most}, or split the load over several processes; \
         raising the hard limit needs CAP_SYS_RESOURCE (`ulimit -n {needed}` with it; \
         limits.conf, systemd LimitNOFILE), which even root may lack"
    )]
    HardFileLimit {
        connections: u64,
        needed: u64,
        hard: u64,
        most: u64,
    },
    #[error(transparent)]
    Spec(#[from] webtune_model::SpecError),
    #[error("{0}")]
    Scenario(String),
    #[error("bad load settings: {0}")]
    BadLoad(String),
    #[error("--cacert {path}: {reason} (give a PEM file with the CA certificate)")]
    CaCert { path: String, reason: String },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("cannot start a worker thread: {0}")]
    Thread(std::io::Error),
    #[error("--io uring: io_uring is not available here: {0} (use --io epoll, or --io auto)")]
    IoUring(String),
    #[error("cannot create an event loop: {0}")]
    Poll(std::io::Error),
}
