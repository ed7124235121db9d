//! Apache's parameters: per MPM, with Debian 12's defaults (mods-available/mpm_*.conf,
//! apache2.conf), and mod_ssl's / mod_http2's at a TLS front.

use crate::params::{ParamKind, ParamSpec, Value};
use crate::servers::Mpm;
use crate::vocab::PROTOCOLS;

/// `AcceptFilter`'s values (Apache's manual); on Linux anything but `none` is
/// TCP_DEFER_ACCEPT, so `httpready` acts as `data`.
pub(super) const ACCEPT_FILTERS: &[&str] = &["data", "none", "httpready"];

/// Every parameter of Apache under `mpm` (names without prefix).
pub(super) fn parameters(mpm: Mpm) -> Vec<ParamSpec> {
    let int = ParamSpec::int;
    let mut p = match mpm {
        Mpm::Prefork => vec![
            int(
                "StartServers",
                (1, 20_000),
                5,
                "StartServers",
                "child processes created at startup",
            ),
            int(
                "MinSpareServers",
                (1, 20_000),
                5,
                "MinSpareServers",
                "fewest idle children kept; below it Apache forks more",
            ),
            int(
                "MaxSpareServers",
                (1, 20_000),
                10,
                "MaxSpareServers",
                "most idle children kept; above it Apache kills some",
            ),
            int(
                "ServerLimit",
                (1, 20_000),
                256,
                "ServerLimit",
                "upper bound for MaxRequestWorkers (processes)",
            ),
            int(
                "MaxRequestWorkers",
                (1, 20_000),
                150,
                "MaxRequestWorkers",
                "most requests served at once (= processes under prefork)",
            ),
        ],
        Mpm::Worker | Mpm::Event => vec![
            int(
                "StartServers",
                (1, 20_000),
                2,
                "StartServers",
                "child processes created at startup",
            ),
            int(
                "MinSpareThreads",
                (1, 200_000),
                25,
                "MinSpareThreads",
                "fewest idle threads kept over all children",
            ),
            int(
                "MaxSpareThreads",
                (1, 200_000),
                75,
                "MaxSpareThreads",
                "most idle threads kept over all children",
            ),
            int(
                "ServerLimit",
                (1, 20_000),
                16,
                "ServerLimit",
                "most child processes",
            ),
            int(
                "ThreadLimit",
                (1, 20_000),
                64,
                "ThreadLimit",
                "upper bound for ThreadsPerChild",
            ),
            int(
                "ThreadsPerChild",
                (1, 20_000),
                25,
                "ThreadsPerChild",
                "threads in each child process",
            ),
            int(
                "MaxRequestWorkers",
                (1, 200_000),
                150,
                "MaxRequestWorkers",
                "most requests served at once (threads over all children)",
            ),
        ],
    };
    p.push(int(
        "MaxConnectionsPerChild",
        (0, 100_000_000),
        0,
        "MaxConnectionsPerChild",
        "connections a child serves before it is replaced (0 = never)",
    ));
    if mpm == Mpm::Event {
        p.push(ParamSpec {
            name: "AsyncRequestWorkerFactor".to_string(),
            kind: ParamKind::Float {
                min: 0.1,
                max: 1000.0,
            },
            default: Value::Float(2.0),
            directive: "AsyncRequestWorkerFactor",
            meaning: "how many idle/async connections per worker thread a child accepts",
        });
    }
    p.push(ParamSpec::switch(
        "KeepAlive",
        true,
        "KeepAlive",
        "keep client connections open between requests",
    ));
    p.push(int(
        "KeepAliveTimeout",
        (0, 3_600),
        5,
        "KeepAliveTimeout",
        "seconds an idle keep-alive connection is kept",
    ));
    p.push(int(
        "MaxKeepAliveRequests",
        (0, 100_000_000),
        100,
        "MaxKeepAliveRequests",
        "requests per keep-alive connection (0 = unlimited)",
    ));
    p.push(int(
        "ListenBacklog",
        (1, 65_535),
        511,
        "ListenBacklog",
        "listen queue length asked of the kernel (capped by net.core.somaxconn)",
    ));
    p.push(ParamSpec::switch(
        "EnableSendfile",
        false,
        "EnableSendfile",
        "send static files with sendfile(2) (Apache's default: Off)",
    ));
    p.push(ParamSpec::choice(
        "AcceptFilter",
        ACCEPT_FILTERS,
        "data",
        "AcceptFilter http|https",
        "accept only once the client sent data (Linux: data = httpready = TCP_DEFER_ACCEPT; \
         none: plain accept); on every listener",
    ));
    p.push(int(
        "Timeout",
        (1, 3_600),
        300,
        "Timeout",
        "seconds Apache waits for I/O on a connection",
    ));
    p
}

/// Defaults are Debian 12's mods-available/ssl.conf (a ~500 KiB session cache), except
/// the protocols: TLS 1.2 and 1.3, what webtune speaks (Debian also lists 1.0 and 1.1).
pub(super) fn tls_parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec::int(
            "SSLSessionCache",
            (0, 1_048_576),
            500,
            "SSLSessionCache shmcb:…(N KiB)",
            "KiB of shared session cache (Debian's ssl.conf: ~500; 0: none)",
        ),
        ParamSpec::switch(
            "SSLSessionTickets",
            true,
            "SSLSessionTickets",
            "resume sessions from tickets the client keeps",
        ),
        ParamSpec::choice(
            "SSLProtocol",
            PROTOCOLS,
            "TLSv1.2+TLSv1.3",
            "SSLProtocol",
            "TLS versions offered",
        ),
        ParamSpec::switch(
            "Protocols_h2",
            false,
            "Protocols h2 http/1.1",
            "offer HTTP/2 by ALPN (mod_http2)",
        ),
        ParamSpec::int(
            "H2MaxSessionStreams",
            (1, 100_000),
            100,
            "H2MaxSessionStreams",
            "streams one HTTP/2 connection may have open at once",
        ),
    ]
}
