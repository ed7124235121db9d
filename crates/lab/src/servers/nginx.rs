//! nginx: its parameters (defaults from Debian 12's /etc/nginx/nginx.conf, else nginx's
//! built-in ones), its config for each role in a lab stack (static files, reverse proxy,
//! FastCGI front end; TLS and HTTP/2 at a TLS front), the command line that runs a user's
//! own copied config, and what of it is worth tuning. Ready when `GET /empty.gif` answers;
//! stopped with SIGQUIT (nginx's graceful shutdown).

use super::{
    ready_on, require, ImportedConfig, NginxRole, Programs, Readiness, RenderContext,
    RenderedServer, Requirement, ServerPlan, ServerType,
};
use crate::params::{ParamKind, ParamSpec, Value};
use crate::vocab::{self, fill, Tunable, CERT_FILE, KEY_FILE, PROTOCOLS};
use crate::LabError;
use std::ffi::OsString;
use std::path::PathBuf;

const TEMPLATE: &str = include_str!("../../templates/nginx.conf");

pub const NEEDS: Requirement = Requirement {
    program: "nginx",
    package: "nginx-light",
};

const WHY_WORKERS: &str = "nginx worker processes; about one per core (seed 002: more than \
    the cores made it worse)";
const WHY_CONNECTIONS: &str = "connections each nginx worker may hold, clients and upstreams \
    together; too few fail under high concurrency (seed 003 at 1024 connections)";
/// The event methods `use` offers; `auto` (the default) writes no `use` line: nginx picks
/// its best, epoll on Linux.
pub const EVENT_METHODS: &[&str] = &["auto", "epoll", "poll", "select"];

const WHY_UPSTREAM_KEEPALIVE: &str = "idle backend connections nginx keeps: a connect per \
    request saved on the backend";

/// nginx in one of its roles.
#[derive(Debug, Clone, Copy)]
pub struct Nginx {
    pub role: NginxRole,
}

impl ServerType for Nginx {
    fn name(&self) -> &'static str {
        "nginx"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![NEEDS]
    }

    fn program(&self, programs: &Programs) -> Result<PathBuf, LabError> {
        require(&programs.nginx, NEEDS)
    }

    /// `keepalive_timeout 0` turns keep-alive off: its request limit does nothing.
    fn inert_rules(&self) -> Vec<crate::params::InertRule> {
        vec![crate::params::InertRule::new(
            "keepalive_requests",
            "keepalive_timeout",
            &["0"],
        )]
    }

    /// nginx's syntax: a `;` after each directive, and the `listen` options on a listen
    /// line (the port stands for each of the server's own listen lines).
    fn directive_line(&self, spec: &ParamSpec, value: &str) -> String {
        match spec.name.as_str() {
            "listen_backlog" => {
                format!("listen 80 backlog={value};  # backlog={value} on each listen line")
            }
            "reuseport" if value == "on" => {
                "listen 80 reuseport;  # reuseport on each listen line".to_string()
            }
            "reuseport" => "listen 80;  # no reuseport on the listen lines".to_string(),
            _ => format!("{} {value};", spec.directive),
        }
    }

    fn parameters(&self) -> Vec<ParamSpec> {
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
            ParamSpec::int(
                "worker_connections",
                (2, 1_048_576),
                768,
                "worker_connections",
                "connections each worker may hold (clients and upstreams)",
            ),
            ParamSpec::int(
                "worker_rlimit_nofile",
                (0, 1_048_576),
                0,
                "worker_rlimit_nofile",
                "open-file limit of each worker (0 = inherit webtune's)",
            ),
            ParamSpec::choice(
                "use",
                EVENT_METHODS,
                "auto",
                "events { use }",
                "event method (auto: nginx's choice, epoll on Linux); seed 002: kqueue stalled \
                 at -parallel 1 (138/s), select did 13,427/s",
            ),
            ParamSpec::switch(
                "multi_accept",
                false,
                "multi_accept",
                "accept every pending connection at once",
            ),
            ParamSpec::switch(
                "accept_mutex",
                false,
                "accept_mutex",
                "workers take turns accepting",
            ),
            ParamSpec::int(
                "listen_backlog",
                (1, 65_535),
                511,
                "listen ... backlog=",
                "listen queue length asked of the kernel (capped by net.core.somaxconn)",
            ),
            ParamSpec::switch(
                "reuseport",
                false,
                "listen ... reuseport",
                "one listen socket per worker (kernel spreads connections)",
            ),
            ParamSpec::int(
                "keepalive_timeout",
                (0, 3_600),
                65,
                "keepalive_timeout",
                "seconds an idle client connection is kept (0 = no keep-alive)",
            ),
            ParamSpec::int(
                "keepalive_requests",
                (1, 100_000_000),
                1000,
                "keepalive_requests",
                "requests per client keep-alive connection",
            ),
            ParamSpec::switch("sendfile", true, "sendfile", "send files with sendfile(2)"),
            ParamSpec::switch(
                "tcp_nopush",
                true,
                "tcp_nopush",
                "TCP_CORK: headers and file start in one packet",
            ),
            ParamSpec::switch(
                "tcp_nodelay",
                true,
                "tcp_nodelay",
                "TCP_NODELAY on keep-alive connections",
            ),
            ParamSpec::int(
                "open_file_cache",
                (0, 1_000_000),
                0,
                "open_file_cache max=",
                "cached open file descriptors (0 = off)",
            ),
        ];
        if self.role == NginxRole::Proxy {
            p.push(ParamSpec::switch(
                "proxy_buffering",
                true,
                "proxy_buffering",
                "read the backend's answer into buffers, freeing the backend early",
            ));
        }
        if self.role != NginxRole::Static {
            p.push(ParamSpec::int(
                "upstream_keepalive",
                (0, 65_536),
                0,
                "upstream { keepalive }",
                "idle backend connections kept per worker (0 = new connection per request)",
            ));
        }
        p
    }

    /// Defaults are nginx's own (Debian sets none: no session cache, tickets on), except
    /// the protocols: TLS 1.2 and 1.3, what webtune speaks.
    fn tls_parameters(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::int(
                "ssl_session_cache",
                (0, 1024),
                0,
                "ssl_session_cache shared:SSL:Nm",
                "MB of shared session cache (0: nginx's default `none`: ids do not resume)",
            ),
            ParamSpec::switch(
                "ssl_session_tickets",
                true,
                "ssl_session_tickets",
                "resume sessions from tickets the client keeps",
            ),
            ParamSpec::choice(
                "ssl_protocols",
                PROTOCOLS,
                "TLSv1.2+TLSv1.3",
                "ssl_protocols",
                "TLS versions offered",
            ),
            ParamSpec::switch("http2", false, "listen … http2", "offer HTTP/2 by ALPN"),
            ParamSpec::int(
                "http2_max_concurrent_streams",
                (1, 100_000),
                128,
                "http2_max_concurrent_streams",
                "streams one HTTP/2 connection may have open at once",
            ),
        ]
    }

    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let mut vars = c.vars(self);
        vars.insert(
            "role".into(),
            match self.role {
                NginxRole::Static => "static file server",
                NginxRole::Proxy => "reverse proxy",
                NginxRole::FastCgi => "FastCGI front end",
            }
            .into(),
        );
        // Workers write temp files into the private directory, which only its owner may
        // enter; as root they therefore run as root (see docs/lab.md).
        let root = c.layout.privileged;
        vars.insert(
            "user".into(),
            if root { "user root;" } else { "" }.to_string(),
        );
        let nofile = c.int("worker_rlimit_nofile");
        vars.insert(
            "worker_rlimit_nofile".into(),
            if nofile > 0 {
                format!("worker_rlimit_nofile {nofile};")
            } else {
                String::new()
            },
        );
        vars.insert("use".into(), use_line(c)?);
        let (tls_listen, tls_block) = if c.tls {
            tls_directives(c)
        } else {
            (String::new(), String::new())
        };
        vars.insert("tls".into(), tls_block);
        let backlog = c.int("listen_backlog");
        let reuse = if c.switch("reuseport") {
            " reuseport"
        } else {
            ""
        };
        let listen: Vec<String> = c
            .addresses()
            .iter()
            .map(|a| format!("        listen {a} backlog={backlog}{reuse}{tls_listen};"))
            .collect();
        vars.insert("listen".into(), listen.join("\n"));
        let cache = c.int("open_file_cache");
        vars.insert(
            "open_file_cache".into(),
            if cache > 0 {
                format!("open_file_cache max={cache} inactive=20s;")
            } else {
                "open_file_cache off;".into()
            },
        );
        let keepalive = c.int("upstream_keepalive");
        vars.insert(
            "upstream".into(),
            if self.role == NginxRole::Static {
                String::new()
            } else {
                let mut u = format!(
                    "\n    upstream backend {{\n        server 127.0.0.1:{};\n",
                    c.backend_port
                );
                if keepalive > 0 {
                    u.push_str(&format!("        keepalive {keepalive};\n"));
                }
                u.push_str("    }\n");
                u
            },
        );
        let buffering = vars
            .get("proxy_buffering")
            .cloned()
            .unwrap_or_else(|| "on".into());
        vars.insert("locations".into(), self.locations(keepalive, &buffering));
        let dir = c.dir();
        let config = dir.join("nginx.conf");
        let text = fill(TEMPLATE, &vars)?;
        let mut prefix_arg = dir.to_path_buf().into_os_string();
        prefix_arg.push("/");
        let error_log = dir.join("nginx-error.log");
        let base: Vec<OsString> = vec![
            "-p".into(),
            prefix_arg,
            "-c".into(),
            config.clone().into(),
            "-e".into(),
            error_log.clone().into(),
        ];
        Ok(RenderedServer {
            configs: vec![("nginx.conf".to_string(), text)],
            plan: ServerPlan {
                label: c.label(self),
                component: super::Component::Nginx(self.role),
                program: c.program(self),
                check_args: check_args(&base),
                run_args: base,
                config_file: config,
                error_log,
                output_log: dir.join("nginx.out"),
                port: c.port,
                stop_signal: libc::SIGQUIT,
                readiness: ready_on(c.tls, "/empty.gif"),
            },
        })
    }

    fn imported_plan(&self, import: &ImportedConfig) -> Result<ServerPlan, LabError> {
        let program = self.program(import.programs)?;
        let mut global = format!(
            "daemon off; pid {};",
            import.dir.join("run/nginx.pid").display()
        );
        if import.privileged {
            // Workers write temp files into the private directory, which only its owner may
            // enter (as for the lab's own nginx).
            global.push_str(" user root;");
        }
        let error_log = import.error_log();
        let base: Vec<OsString> = vec![
            "-c".into(),
            import.config.clone().into(),
            "-e".into(),
            error_log.clone().into(),
            "-g".into(),
            global.into(),
        ];
        Ok(ServerPlan {
            label: "nginx (your config)".into(),
            component: super::Component::Nginx(self.role),
            program,
            check_args: check_args(&base),
            run_args: base,
            config_file: import.config.clone(),
            error_log,
            output_log: import.dir.join("nginx.out"),
            port: import.port,
            stop_signal: libc::SIGQUIT,
            readiness: Readiness::TcpAccept,
        })
    }

    fn tuning_space(&self, prefix: &str, cores: i64, proxy: bool) -> Vec<Tunable> {
        let p = |n: &str| format!("{prefix}{n}");
        let mut space = vec![
            Tunable::int(
                p("worker_processes"),
                1,
                (cores * 2).max(2),
                false,
                WHY_WORKERS,
            ),
            Tunable::int(p("worker_connections"), 256, 8192, true, WHY_CONNECTIONS),
            Tunable::int(p("listen_backlog"), 64, 4096, true, vocab::WHY_BACKLOG),
        ];
        if proxy {
            space.push(Tunable::int(
                p("upstream_keepalive"),
                0,
                64,
                false,
                WHY_UPSTREAM_KEEPALIVE,
            ));
        }
        space
    }
}

impl Nginx {
    /// The `location` blocks of its role.
    fn locations(&self, keepalive: i64, buffering: &str) -> String {
        match self.role {
            NginxRole::Static => "        location / {\n        }\n".to_string(),
            NginxRole::Proxy => {
                let mut l =
                    String::from("        location / {\n            proxy_pass http://backend;\n");
                l.push_str(&format!("            proxy_buffering {buffering};\n"));
                l.push_str("            proxy_set_header Host $host;\n");
                if keepalive > 0 {
                    l.push_str("            proxy_http_version 1.1;\n");
                    l.push_str("            proxy_set_header Connection \"\";\n");
                }
                l.push_str("        }\n");
                l
            }
            NginxRole::FastCgi => {
                let mut l = String::from(
                    "        location / {\n            rewrite \"^/cpu/([0-9]+)$\" \
                     /cpu.php?us=$1 last;\n        }\n",
                );
                l.push_str("        location ~ \\.php$ {\n");
                l.push_str("            include /etc/nginx/fastcgi_params;\n");
                l.push_str(
                    "            fastcgi_param SCRIPT_FILENAME \
                     $document_root$fastcgi_script_name;\n",
                );
                l.push_str("            fastcgi_pass backend;\n");
                if keepalive > 0 {
                    l.push_str("            fastcgi_keep_conn on;\n");
                }
                l.push_str("        }\n");
                l
            }
        }
    }
}

/// The events block's `use` line: none for `auto`; a method this nginx was built without
/// is refused here, in one line naming the ones it has, rather than by `nginx -t` at start.
fn use_line(c: &RenderContext) -> Result<String, LabError> {
    let method = match c.get("use") {
        Some(Value::Word(m)) if m != "auto" => m,
        _ => return Ok(String::new()),
    };
    let program = c.program(&Nginx {
        role: NginxRole::Static,
    });
    let have = super::nginx_events::methods(&program)?;
    if !have.contains(&method) {
        return Err(LabError::Inconsistent(format!(
            "{}use={method}: {} was built without the {method} event method; it has: {}",
            c.prefix,
            program.display(),
            if have.is_empty() {
                "none that webtune knows".to_string()
            } else {
                have.join(", ")
            }
        )));
    }
    Ok(format!("use {method};"))
}

/// `-t -q` before the run's arguments: check the config and exit.
fn check_args(base: &[OsString]) -> Vec<OsString> {
    let mut args = vec![OsString::from("-t"), OsString::from("-q")];
    args.extend(base.iter().cloned());
    args
}

/// The TLS front's `listen` flags and its `server` block lines.
fn tls_directives(c: &RenderContext) -> (String, String) {
    let dir = c.dir().display();
    let h2 = if c.switch("http2") { " http2" } else { "" };
    let cache = match c.int("ssl_session_cache") {
        0 => "none".to_string(),
        mb => format!("shared:SSL:{mb}m"),
    };
    let block = format!(
        "        ssl_certificate {dir}/{CERT_FILE};\n\
         \x20       ssl_certificate_key {dir}/{KEY_FILE};\n\
         \x20       ssl_protocols {};\n\
         \x20       ssl_session_cache {cache};\n\
         \x20       ssl_session_tickets {};\n\
         \x20       http2_max_concurrent_streams {};\n",
        vocab::protocol_words(c.get("ssl_protocols")),
        if c.switch("ssl_session_tickets") {
            "on"
        } else {
            "off"
        },
        c.int("http2_max_concurrent_streams"),
    );
    (format!(" ssl{h2}"), block)
}
