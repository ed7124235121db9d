//! The stacks the lab can start, the servers (components) each is made of, and the
//! parameters each component declares. Defaults are Debian 12's stock configuration
//! (/etc/apache2/mods-available/mpm_*.conf, /etc/apache2/apache2.conf,
//! /etc/nginx/nginx.conf, /etc/php/8.2/fpm/pool.d/www.conf) or the server's built-in
//! default where Debian sets none, so "defaults" means what a fresh install runs.

use crate::params::{ParamKind, ParamSpec, Value};
use crate::tls::TlsStack;
use crate::LabError;

/// Apache's multi-processing module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpm {
    Prefork,
    Worker,
    Event,
}

impl Mpm {
    pub fn name(self) -> &'static str {
        match self {
            Mpm::Prefork => "prefork",
            Mpm::Worker => "worker",
            Mpm::Event => "event",
        }
    }
}

/// What an nginx instance does with requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NginxRole {
    /// Serves the document root's files.
    Static,
    /// Proxies every request to an HTTP backend (`upstream`).
    Proxy,
    /// Serves files and hands `*.php` to php-fpm over FastCGI.
    FastCgi,
}

/// One server process (with its children) in a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    Nginx(NginxRole),
    /// Apache httpd; PHP through mod_php under prefork, through php-fpm otherwise.
    Apache(Mpm),
    PhpFpm,
}

impl Component {
    pub fn server_name(self) -> &'static str {
        match self {
            Component::Nginx(_) => "nginx",
            Component::Apache(_) => "apache2",
            Component::PhpFpm => "php-fpm",
        }
    }
}

/// A stack the lab knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    Nginx,
    Apache(Mpm),
    /// nginx in front, proxying to Apache with this MPM (seed 000's topology).
    NginxApache(Mpm),
    NginxPhpFpm,
    /// A stack with TLS (and HTTP/2) at its front server (see `tls`).
    Tls(TlsStack),
    /// Somebody else's server: load only, sampling of named processes.
    External,
}

/// A program a stack needs, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    pub program: &'static str,
    pub package: &'static str,
}

const NEEDS_NGINX: Requirement = Requirement {
    program: "nginx",
    package: "nginx-light",
};
const NEEDS_APACHE: Requirement = Requirement {
    program: "apache2",
    package: "apache2",
};
const NEEDS_MOD_PHP: Requirement = Requirement {
    program: "libphp*.so",
    package: "libapache2-mod-php",
};
const NEEDS_FPM: Requirement = Requirement {
    program: "php-fpm",
    package: "php-fpm",
};
const NEEDS_OPENSSL: Requirement = Requirement {
    program: "openssl",
    package: "openssl",
};

impl StackKind {
    /// Every stack, in the order `lab stacks` lists them.
    pub const ALL: [StackKind; 12] = [
        StackKind::Nginx,
        StackKind::Apache(Mpm::Prefork),
        StackKind::Apache(Mpm::Worker),
        StackKind::Apache(Mpm::Event),
        StackKind::NginxApache(Mpm::Prefork),
        StackKind::NginxApache(Mpm::Worker),
        StackKind::NginxApache(Mpm::Event),
        StackKind::NginxPhpFpm,
        StackKind::Tls(TlsStack::ALL[0]),
        StackKind::Tls(TlsStack::ALL[1]),
        StackKind::Tls(TlsStack::ALL[2]),
        StackKind::External,
    ];

    /// Every stack, as a slice.
    pub fn all() -> &'static [StackKind] {
        &Self::ALL
    }

    pub fn name(self) -> &'static str {
        match self {
            StackKind::Nginx => "nginx",
            StackKind::Apache(Mpm::Prefork) => "apache-prefork",
            StackKind::Apache(Mpm::Worker) => "apache-worker",
            StackKind::Apache(Mpm::Event) => "apache-event",
            StackKind::NginxApache(Mpm::Prefork) => "nginx-apache",
            StackKind::NginxApache(Mpm::Worker) => "nginx-apache-worker",
            StackKind::NginxApache(Mpm::Event) => "nginx-apache-event",
            StackKind::NginxPhpFpm => "nginx-php-fpm",
            StackKind::Tls(t) => t.name(),
            StackKind::External => "external",
        }
    }

    pub fn from_name(name: &str) -> Result<StackKind, LabError> {
        Self::all()
            .iter()
            .copied()
            .find(|s| s.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| LabError::UnknownStack(name.to_string()))
    }

    /// One line: what runs.
    pub fn summary(self) -> &'static str {
        match self {
            StackKind::Nginx => "nginx serving static files (empty.gif 43 B, index.html ~80 KB)",
            StackKind::Apache(Mpm::Prefork) => {
                "Apache prefork: static files and /cpu/US through mod_php"
            }
            StackKind::Apache(Mpm::Worker) => {
                "Apache worker: static files and /cpu/US through php-fpm (proxy_fcgi)"
            }
            StackKind::Apache(Mpm::Event) => {
                "Apache event: static files and /cpu/US through php-fpm (proxy_fcgi)"
            }
            StackKind::NginxApache(Mpm::Prefork) => {
                "nginx proxying to Apache prefork + mod_php (seed 000); frontend.*, backend.*"
            }
            StackKind::NginxApache(Mpm::Worker) => {
                "nginx proxying to Apache worker + php-fpm; frontend.*, backend.*"
            }
            StackKind::NginxApache(Mpm::Event) => {
                "nginx proxying to Apache event + php-fpm; frontend.*, backend.*"
            }
            StackKind::NginxPhpFpm => "nginx serving static files and /cpu/US through php-fpm",
            StackKind::Tls(t) => t.summary(),
            StackKind::External => {
                "a server you run: load only; `--process NAME` samples its processes"
            }
        }
    }

    /// The servers of this stack with their parameter prefixes, in start order
    /// (backends first); stop goes in reverse.
    pub fn components(self) -> Vec<(&'static str, Component)> {
        match self {
            StackKind::Nginx => vec![("", Component::Nginx(NginxRole::Static))],
            StackKind::Apache(Mpm::Prefork) => vec![("", Component::Apache(Mpm::Prefork))],
            StackKind::Apache(mpm) => vec![("", Component::PhpFpm), ("", Component::Apache(mpm))],
            StackKind::NginxApache(Mpm::Prefork) => vec![
                ("backend.", Component::Apache(Mpm::Prefork)),
                ("frontend.", Component::Nginx(NginxRole::Proxy)),
            ],
            StackKind::NginxApache(mpm) => vec![
                ("backend.", Component::PhpFpm),
                ("backend.", Component::Apache(mpm)),
                ("frontend.", Component::Nginx(NginxRole::Proxy)),
            ],
            StackKind::NginxPhpFpm => vec![
                ("", Component::PhpFpm),
                ("", Component::Nginx(NginxRole::FastCgi)),
            ],
            StackKind::Tls(t) => t.plain().components(),
            StackKind::External => Vec::new(),
        }
    }

    /// What must be installed.
    pub fn requirements(self) -> Vec<Requirement> {
        let mut needs = Vec::new();
        for (_, component) in self.components() {
            let add: &[Requirement] = match component {
                Component::Nginx(_) => &[NEEDS_NGINX],
                Component::Apache(Mpm::Prefork) => &[NEEDS_APACHE, NEEDS_MOD_PHP],
                Component::Apache(_) => &[NEEDS_APACHE],
                Component::PhpFpm => &[NEEDS_FPM],
            };
            for r in add {
                if !needs.contains(r) {
                    needs.push(*r);
                }
            }
        }
        if self.is_tls() {
            needs.push(NEEDS_OPENSSL);
        }
        needs
    }

    /// Every tunable parameter, with its full name.
    pub fn parameters(self) -> Vec<ParamSpec> {
        let mut all = Vec::new();
        for (prefix, component) in self.components() {
            for mut spec in component_parameters(component) {
                spec.name = format!("{prefix}{}", spec.name);
                all.push(spec);
            }
        }
        if self != StackKind::External {
            all.extend(crate::host::parameters());
        }
        if let (true, Some((prefix, front))) = (self.is_tls(), self.components().last()) {
            for mut spec in crate::tls::parameters(*front) {
                spec.name = format!("{prefix}{}", spec.name);
                all.push(spec);
            }
        }
        all
    }

    /// Does the front server speak TLS (https://)?
    pub fn is_tls(self) -> bool {
        matches!(self, StackKind::Tls(_))
    }

    /// Does this stack serve the CPU-bound PHP page?
    pub fn has_php(self) -> bool {
        match self {
            StackKind::Tls(t) => t.plain().has_php(),
            _ => !matches!(self, StackKind::Nginx | StackKind::External),
        }
    }
}

fn int(
    name: &str,
    min: i64,
    max: i64,
    default: i64,
    directive: &'static str,
    meaning: &'static str,
) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Int {
            min,
            max,
            keyword: None,
        },
        default: Value::Int(default),
        directive,
        meaning,
    }
}

fn switch(name: &str, default: bool, directive: &'static str, meaning: &'static str) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Switch,
        default: Value::Switch(default),
        directive,
        meaning,
    }
}

/// The parameters one server declares (names without prefix).
pub fn component_parameters(component: Component) -> Vec<ParamSpec> {
    match component {
        Component::Apache(mpm) => apache_parameters(mpm),
        Component::Nginx(role) => nginx_parameters(role),
        Component::PhpFpm => php_fpm_parameters(),
    }
}

fn apache_parameters(mpm: Mpm) -> Vec<ParamSpec> {
    let mut p = Vec::new();
    match mpm {
        Mpm::Prefork => {
            p.push(int(
                "StartServers",
                1,
                20_000,
                5,
                "StartServers",
                "child processes created at startup",
            ));
            p.push(int(
                "MinSpareServers",
                1,
                20_000,
                5,
                "MinSpareServers",
                "fewest idle children kept; below it Apache forks more",
            ));
            p.push(int(
                "MaxSpareServers",
                1,
                20_000,
                10,
                "MaxSpareServers",
                "most idle children kept; above it Apache kills some",
            ));
            p.push(int(
                "ServerLimit",
                1,
                20_000,
                256,
                "ServerLimit",
                "upper bound for MaxRequestWorkers (processes)",
            ));
            p.push(int(
                "MaxRequestWorkers",
                1,
                20_000,
                150,
                "MaxRequestWorkers",
                "most requests served at once (= processes under prefork)",
            ));
        }
        Mpm::Worker | Mpm::Event => {
            p.push(int(
                "StartServers",
                1,
                20_000,
                2,
                "StartServers",
                "child processes created at startup",
            ));
            p.push(int(
                "MinSpareThreads",
                1,
                200_000,
                25,
                "MinSpareThreads",
                "fewest idle threads kept over all children",
            ));
            p.push(int(
                "MaxSpareThreads",
                1,
                200_000,
                75,
                "MaxSpareThreads",
                "most idle threads kept over all children",
            ));
            p.push(int(
                "ServerLimit",
                1,
                20_000,
                16,
                "ServerLimit",
                "most child processes",
            ));
            p.push(int(
                "ThreadLimit",
                1,
                20_000,
                64,
                "ThreadLimit",
                "upper bound for ThreadsPerChild",
            ));
            p.push(int(
                "ThreadsPerChild",
                1,
                20_000,
                25,
                "ThreadsPerChild",
                "threads in each child process",
            ));
            p.push(int(
                "MaxRequestWorkers",
                1,
                200_000,
                150,
                "MaxRequestWorkers",
                "most requests served at once (threads over all children)",
            ));
        }
    }
    p.push(int(
        "MaxConnectionsPerChild",
        0,
        100_000_000,
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
    p.push(switch(
        "KeepAlive",
        true,
        "KeepAlive",
        "keep client connections open between requests",
    ));
    p.push(int(
        "KeepAliveTimeout",
        0,
        3_600,
        5,
        "KeepAliveTimeout",
        "seconds an idle keep-alive connection is kept",
    ));
    p.push(int(
        "MaxKeepAliveRequests",
        0,
        100_000_000,
        100,
        "MaxKeepAliveRequests",
        "requests per keep-alive connection (0 = unlimited)",
    ));
    p.push(int(
        "ListenBacklog",
        1,
        65_535,
        511,
        "ListenBacklog",
        "listen queue length asked of the kernel (capped by net.core.somaxconn)",
    ));
    p.push(int(
        "Timeout",
        1,
        3_600,
        300,
        "Timeout",
        "seconds Apache waits for I/O on a connection",
    ));
    p
}

fn nginx_parameters(role: NginxRole) -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec {
            name: "worker_processes".to_string(),
            kind: ParamKind::Int {
                min: 1,
                max: 256,
                keyword: Some("auto"),
            },
            default: Value::Word("auto"),
            directive: "worker_processes",
            meaning: "worker processes (auto = one per CPU)",
        },
        int(
            "worker_connections",
            2,
            1_048_576,
            768,
            "worker_connections",
            "connections each worker may hold (clients and upstreams)",
        ),
        int(
            "worker_rlimit_nofile",
            0,
            1_048_576,
            0,
            "worker_rlimit_nofile",
            "open-file limit of each worker (0 = inherit webtune's)",
        ),
        switch(
            "multi_accept",
            false,
            "multi_accept",
            "accept every pending connection at once",
        ),
        switch(
            "accept_mutex",
            false,
            "accept_mutex",
            "workers take turns accepting",
        ),
        int(
            "listen_backlog",
            1,
            65_535,
            511,
            "listen ... backlog=",
            "listen queue length asked of the kernel (capped by net.core.somaxconn)",
        ),
        switch(
            "reuseport",
            false,
            "listen ... reuseport",
            "one listen socket per worker (kernel spreads connections)",
        ),
        int(
            "keepalive_timeout",
            0,
            3_600,
            65,
            "keepalive_timeout",
            "seconds an idle client connection is kept (0 = no keep-alive)",
        ),
        int(
            "keepalive_requests",
            1,
            100_000_000,
            1000,
            "keepalive_requests",
            "requests per client keep-alive connection",
        ),
        switch("sendfile", true, "sendfile", "send files with sendfile(2)"),
        switch(
            "tcp_nopush",
            true,
            "tcp_nopush",
            "TCP_CORK: headers and file start in one packet",
        ),
        switch(
            "tcp_nodelay",
            true,
            "tcp_nodelay",
            "TCP_NODELAY on keep-alive connections",
        ),
        int(
            "open_file_cache",
            0,
            1_000_000,
            0,
            "open_file_cache max=",
            "cached open file descriptors (0 = off)",
        ),
    ];
    if role == NginxRole::Proxy {
        p.push(switch(
            "proxy_buffering",
            true,
            "proxy_buffering",
            "read the backend's answer into buffers, freeing the backend early",
        ));
    }
    if role != NginxRole::Static {
        p.push(int(
            "upstream_keepalive",
            0,
            65_536,
            0,
            "upstream { keepalive }",
            "idle backend connections kept per worker (0 = new connection per request)",
        ));
    }
    p
}

fn php_fpm_parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec {
            name: "pm".to_string(),
            kind: ParamKind::Choice(&["static", "dynamic", "ondemand"]),
            default: Value::Word("dynamic"),
            directive: "pm",
            meaning: "how php-fpm sizes its pool of PHP processes",
        },
        int(
            "pm.max_children",
            1,
            100_000,
            5,
            "pm.max_children",
            "most PHP processes (requests running PHP at once)",
        ),
        int(
            "pm.start_servers",
            1,
            100_000,
            2,
            "pm.start_servers",
            "PHP processes at startup (dynamic)",
        ),
        int(
            "pm.min_spare_servers",
            1,
            100_000,
            1,
            "pm.min_spare_servers",
            "fewest idle PHP processes (dynamic)",
        ),
        int(
            "pm.max_spare_servers",
            1,
            100_000,
            3,
            "pm.max_spare_servers",
            "most idle PHP processes (dynamic)",
        ),
        int(
            "pm.max_requests",
            0,
            100_000_000,
            0,
            "pm.max_requests",
            "requests a PHP process serves before it is replaced (0 = never)",
        ),
    ]
}

/// Cross-parameter rules Apache would otherwise "fix" silently at start (it lowers the
/// value and logs a warning), which would make a run measure something other than what was
/// asked. Rules the server itself refuses (php-fpm's spare-server bounds, for example) are
/// left to the server's own config check, whose message is shown as is.
pub fn check_consistency(
    stack: StackKind,
    settings: &crate::params::Settings,
) -> Result<(), LabError> {
    for (prefix, component) in stack.components() {
        let Component::Apache(mpm) = component else {
            continue;
        };
        let get = |n: &str| {
            settings
                .get(&format!("{prefix}{n}"))
                .and_then(|v| v.as_int())
                .unwrap_or(0)
        };
        let max_workers = get("MaxRequestWorkers");
        let server_limit = get("ServerLimit");
        match mpm {
            Mpm::Prefork => {
                if max_workers > server_limit {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} exceeds {prefix}ServerLimit \
                         {server_limit}; raise {prefix}ServerLimit too"
                    )));
                }
            }
            Mpm::Worker | Mpm::Event => {
                let threads = get("ThreadsPerChild");
                let thread_limit = get("ThreadLimit");
                if threads > thread_limit {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}ThreadsPerChild {threads} exceeds {prefix}ThreadLimit \
                         {thread_limit}; raise {prefix}ThreadLimit too"
                    )));
                }
                if threads > 0 && max_workers % threads != 0 {
                    let lower = (max_workers / threads).max(1) * threads;
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} is not a multiple of \
                         {prefix}ThreadsPerChild {threads}: Apache would lower it to {lower}; \
                         use {lower} or {}",
                        lower + threads
                    )));
                }
                if max_workers > server_limit * threads {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} exceeds {prefix}ServerLimit × \
                         {prefix}ThreadsPerChild = {server_limit} × {threads}; raise \
                         {prefix}ServerLimit"
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Settings;

    #[test]
    fn names_round_trip_and_are_unique() {
        for s in StackKind::all() {
            assert_eq!(StackKind::from_name(s.name()).unwrap(), *s);
            let params = s.parameters();
            let mut names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            names.sort();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "duplicate parameter in {}", s.name());
            for p in &params {
                // Every default is inside its own range.
                assert!(
                    p.parse(&p.default.to_string()).is_ok(),
                    "{} default",
                    p.name
                );
            }
        }
        assert!(StackKind::from_name("lighttpd").is_err());
    }

    #[test]
    fn proxy_stack_prefixes_both_sides() {
        let names: Vec<String> = StackKind::NginxApache(Mpm::Prefork)
            .parameters()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert!(names.contains(&"backend.MaxRequestWorkers".to_string()));
        assert!(names.contains(&"frontend.worker_processes".to_string()));
        assert!(names.contains(&"frontend.upstream_keepalive".to_string()));
        assert!(!names.contains(&"MaxRequestWorkers".to_string()));
    }

    #[test]
    fn apache_silent_fixups_are_refused() {
        let stack = StackKind::Apache(Mpm::Worker);
        let specs = stack.parameters();
        let set = |pairs: &[(&str, &str)]| {
            let a: Vec<(String, String)> = pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            Settings::from_assignments(stack.name(), &specs, &a).unwrap()
        };
        assert!(check_consistency(
            stack,
            &set(&[("MaxRequestWorkers", "50"), ("ThreadsPerChild", "25")])
        )
        .is_ok());
        let err = check_consistency(stack, &set(&[("MaxRequestWorkers", "1000")]));
        assert!(err.unwrap_err().to_string().contains("ServerLimit"));
        let err = check_consistency(stack, &set(&[("ThreadsPerChild", "100")]));
        assert!(err.unwrap_err().to_string().contains("ThreadLimit"));
        let err = check_consistency(stack, &set(&[("MaxRequestWorkers", "40")]));
        assert!(err.unwrap_err().to_string().contains("use 25 or 50"));
    }
}
