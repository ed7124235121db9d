//! The stacks the lab can start: their names, the servers (components) each is made of in
//! start order with their parameter prefixes, and what a stack as a whole needs and
//! declares (its servers' parameters, prefixed, and the host's), the TLS variants
//! (`TlsStack`). What each server is, its parameters and their defaults (Debian 12's stock
//! configuration) live in `servers`.

use crate::params::{parse_assignment, ParamSpec, Settings};
use crate::LabError;

pub use crate::servers::{Component, Mpm, NginxRole, Requirement};

/// Validate `NAME=VALUE` assignments for a stack: unknown names and out-of-range values
/// are refused with the parameter's range, and combinations Apache would silently change
/// are refused too. Nothing is started.
pub fn settings_for(stack: StackKind, assignments: &[String]) -> Result<Settings, LabError> {
    let pairs: Vec<(String, String)> = assignments
        .iter()
        .map(|a| parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let settings = Settings::from_assignments(stack.name(), &stack.parameters(), &pairs).map_err(
        |e| match e {
            // Above the hard limit: say which limit, and that it cannot be raised.
            LabError::OutOfRange { name, value, .. }
                if name == "os.nofile"
                    && value
                        .parse::<u64>()
                        .is_ok_and(|v| v > crate::host::nofile_hard_limit()) =>
            {
                crate::host::nofile_refusal(&value)
            }
            e => e,
        },
    )?;
    check_consistency(stack, &settings)?;
    Ok(settings)
}

const NEEDS_OPENSSL: Requirement = Requirement {
    program: "openssl",
    package: "openssl",
};

/// A stack the lab knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    Nginx,
    Apache(Mpm),
    /// nginx in front, proxying to Apache with this MPM (seed 000's topology).
    NginxApache(Mpm),
    NginxPhpFpm,
    /// A stack with TLS (and HTTP/2) at its front server (see `TlsStack`).
    Tls(TlsStack),
    /// Somebody else's server: load only, sampling of named processes.
    External,
    /// A private Postfix receiving SMTP into generated Maildirs (seed 004's postal).
    Postfix,
    /// Caddy over TLS with its certificate: HTTP/1.1, HTTP/2 and HTTP/3 (QUIC, UDP).
    Caddy,
}

impl StackKind {
    /// Every stack, in the order `lab stacks` lists them.
    pub const ALL: [StackKind; 14] = [
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
        StackKind::Caddy,
        StackKind::Postfix,
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
            StackKind::Postfix => "postfix",
            StackKind::Caddy => "caddy",
        }
    }

    pub fn from_name(name: &str) -> Result<StackKind, LabError> {
        Self::all()
            .iter()
            .copied()
            .find(|s| s.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| LabError::UnknownStack {
                name: name.to_string(),
                suggestion: crate::error::did_you_mean(name, Self::all().iter().map(|s| s.name())),
            })
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
            StackKind::Caddy => {
                "Caddy serving static files over TLS: HTTP/1.1, HTTP/2 and HTTP/3 on UDP \
                 (protocols=h1+h2+h3); self-signed cert"
            }
            StackKind::Postfix => {
                "a private Postfix: SMTP on loopback, virtual delivery into generated Maildirs"
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
            StackKind::Postfix => vec![("", Component::Postfix)],
            StackKind::Caddy => vec![("", Component::Caddy)],
        }
    }

    /// What must be installed.
    pub fn requirements(self) -> Vec<Requirement> {
        let mut needs = Vec::new();
        for (_, component) in self.components() {
            for r in component.server().requirements() {
                if !needs.contains(&r) {
                    needs.push(r);
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
        let components = self.components();
        let mut all = Vec::new();
        for (prefix, component) in &components {
            all.extend(
                component
                    .server()
                    .parameters()
                    .into_iter()
                    .map(|spec| spec.prefixed(prefix)),
            );
        }
        if self != StackKind::External {
            all.extend(crate::host::parameters());
        }
        if let (true, Some((prefix, front))) = (self.is_tls(), components.last()) {
            all.extend(
                front
                    .server()
                    .tls_parameters()
                    .into_iter()
                    .map(|spec| spec.prefixed(prefix)),
            );
        }
        all
    }

    /// Which parameters (full names) do nothing under which values of another, from each
    /// server's module.
    pub fn inert_rules(self) -> Vec<crate::params::InertRule> {
        self.components()
            .into_iter()
            .flat_map(|(prefix, component)| {
                component
                    .server()
                    .inert_rules()
                    .into_iter()
                    .map(move |r| r.prefixed(prefix))
            })
            .collect()
    }

    /// The config line that sets parameter `name` (full name) to `value`, as its server
    /// reads it; None for a parameter of no server of this stack (the host's).
    pub fn directive_line(self, name: &str, value: &str) -> Option<String> {
        self.components()
            .into_iter()
            .find_map(|(prefix, component)| {
                let local = name.strip_prefix(prefix)?;
                let server = component.server();
                let spec = server.parameters().into_iter().find(|p| p.name == local)?;
                Some(server.directive_line(&spec, value))
            })
    }

    /// Does the front server speak TLS (https://)?
    pub fn is_tls(self) -> bool {
        matches!(self, StackKind::Tls(_) | StackKind::Caddy)
    }

    /// Does this stack serve the CPU-bound PHP page?
    pub fn has_php(self) -> bool {
        match self {
            StackKind::Tls(t) => t.plain().has_php(),
            _ => !matches!(
                self,
                StackKind::Nginx | StackKind::External | StackKind::Postfix | StackKind::Caddy
            ),
        }
    }
}

/// A stack with TLS at its front server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsStack {
    /// nginx serving static files over TLS (and HTTP/2 when `http2=on`).
    Nginx,
    /// Apache event with mod_ssl (and mod_http2 when `Protocols_h2=on`), PHP via php-fpm.
    ApacheEvent,
    /// nginx terminating TLS, proxying plain HTTP to Apache event + php-fpm.
    NginxApacheEvent,
}

impl TlsStack {
    pub const ALL: [TlsStack; 3] = [
        TlsStack::Nginx,
        TlsStack::ApacheEvent,
        TlsStack::NginxApacheEvent,
    ];

    /// The same stack without TLS (its servers, start order and parameters).
    pub fn plain(self) -> StackKind {
        match self {
            TlsStack::Nginx => StackKind::Nginx,
            TlsStack::ApacheEvent => StackKind::Apache(Mpm::Event),
            TlsStack::NginxApacheEvent => StackKind::NginxApache(Mpm::Event),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsStack::Nginx => "nginx-tls",
            TlsStack::ApacheEvent => "apache-event-tls",
            TlsStack::NginxApacheEvent => "nginx-apache-event-tls",
        }
    }

    /// One line for `lab stacks`. HTTP/2 is off by default, as Debian ships both servers, so
    /// the line says how to turn it on (it used to say "(+http2)", and `-- --http2` then
    /// failed every request); a test holds the line to the parameter's default.
    pub fn summary(self) -> &'static str {
        match self {
            TlsStack::Nginx => {
                "nginx with ssl serving static files (HTTP/2: --set http2=on); self-signed cert"
            }
            TlsStack::ApacheEvent => {
                "Apache event with mod_ssl, /cpu/US via php-fpm (HTTP/2: --set Protocols_h2=on); \
                 self-signed cert"
            }
            TlsStack::NginxApacheEvent => {
                "nginx terminating TLS (HTTP/2: --set frontend.http2=on), proxying to Apache \
                 event + php-fpm; frontend.*, backend.*"
            }
        }
    }

    /// The switch that offers HTTP/2 by ALPN at the front server (full name).
    pub fn http2_parameter(self) -> &'static str {
        match self {
            TlsStack::Nginx => "http2",
            TlsStack::ApacheEvent => "Protocols_h2",
            TlsStack::NginxApacheEvent => "frontend.http2",
        }
    }
}

/// Cross-parameter rules a server would otherwise "fix" silently at start (Apache lowers
/// the value and logs a warning), which would make a run measure something other than what
/// was asked. Rules the server itself refuses (php-fpm's spare-server bounds, for example)
/// are left to the server's own config check, whose message is shown as is.
pub fn check_consistency(
    stack: StackKind,
    settings: &crate::params::Settings,
) -> Result<(), LabError> {
    for (prefix, component) in stack.components() {
        component.server().check_settings(prefix, settings)?;
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

    /// Issue 33 item 16: `lab stacks` said "(+http2)" while HTTP/2 was off by default. The
    /// listing now follows the switch's default: off (Debian's), and the line says which
    /// `--set` turns it on.
    #[test]
    fn tls_listings_and_http2_defaults_agree() {
        for t in TlsStack::ALL {
            let name = t.http2_parameter();
            let params = StackKind::Tls(t).parameters();
            let spec = params
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("{} has no {name}", t.name()));
            let summary = StackKind::Tls(t).summary();
            let hint = format!("--set {name}=on");
            match spec.default.to_string().as_str() {
                "off" => assert!(summary.contains(&hint), "{}: {summary}", t.name()),
                "on" => assert!(!summary.contains(&hint), "{}: {summary}", t.name()),
                other => panic!("{name} is not a switch: {other}"),
            }
            assert!(!summary.contains("(+"), "{}: {summary}", t.name());
        }
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
        // Below ThreadsPerChild Apache raises it ("… increasing to match"), never lowers.
        let err = check_consistency(stack, &set(&[("MaxRequestWorkers", "4")]));
        let text = err.unwrap_err().to_string();
        assert!(
            text.contains("is less than ThreadsPerChild 25: Apache would raise it to 25"),
            "{text}"
        );
        assert!(!text.contains("lower it"), "{text}");
    }

    #[test]
    fn servers_say_which_parameters_are_inert_and_how_their_lines_read() {
        let k = StackKind::from_name("nginx-apache").unwrap();
        let rules = k.inert_rules();
        assert!(rules.iter().any(|r| r.param == "backend.KeepAliveTimeout"
            && r.when == "backend.KeepAlive"
            && r.applies("off")
            && !r.applies("on")));
        assert!(rules
            .iter()
            .any(|r| r.param == "frontend.keepalive_requests" && r.applies("0")));
        assert_eq!(
            k.directive_line("frontend.listen_backlog", "2115").unwrap(),
            "listen 80 backlog=2115;  # backlog=2115 on each listen line"
        );
        assert_eq!(
            k.directive_line("frontend.worker_processes", "2").unwrap(),
            "worker_processes 2;"
        );
        assert_eq!(
            k.directive_line("backend.MaxRequestWorkers", "4").unwrap(),
            "MaxRequestWorkers 4"
        );
        let fpm = StackKind::from_name("nginx-php-fpm").unwrap();
        assert_eq!(
            fpm.directive_line("pm.max_children", "8").unwrap(),
            "pm.max_children = 8"
        );
        assert!(fpm
            .inert_rules()
            .iter()
            .any(|r| r.param == "pm.start_servers" && r.applies("static")));
    }
}
