//! Caddy (Debian 12's caddy 2.6.2): the lab's server that speaks HTTP/3. It always runs
//! as a TLS front with the lab's self-signed certificate (HTTP/3 needs TLS 1.3), serving
//! the document root on TCP (HTTP/1.1, HTTP/2) and UDP (HTTP/3) on the same loopback port.
//! Its parameters keep Caddy's own JSON names and defaults (caddyserver.com/docs/json/
//! apps/http/servers/); its config is JSON rendered here (no Caddyfile adapter between
//! what we asked and what runs), checked with `caddy validate`, with the admin endpoint off
//! and nothing persisted: storage, logs and its HOME live in the private directory. Ready
//! when `GET /empty.gif` answers over HTTPS; stopped with SIGTERM (its graceful stop).

use super::ServerType;
use super::{ready_on, Programs, RenderContext, RenderedServer, Requirement, ServerPlan};
use crate::params::ParamSpec;
use crate::vocab::{Tunable, CERT_FILE, KEY_FILE};
use crate::LabError;
use serde_json::json;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use webtune_model::server::LogMessage;

pub const NEEDS: Requirement = Requirement {
    program: "caddy",
    package: "caddy",
};

/// The protocol sets `protocols` offers, Caddy's default first (all three).
pub const PROTOCOL_SETS: &[&str] = &["h1+h2+h3", "h1+h2", "h1+h3", "h1"];

/// The config file's name in the private directory.
pub const CONFIG_FILE: &str = "caddy.json";
/// The access log (one JSON line per request) when `access_log=on`.
pub const ACCESS_LOG: &str = "caddy-access.log";

/// Warnings the lab's own config causes at every start: the admin endpoint and
/// automatic HTTPS are off by design, and a self-signed certificate has no OCSP responder.
/// They say nothing about a run, so they are not counted.
const EXPECTED_WARNINGS: &[&str] = &[
    "admin endpoint disabled",
    "automatic HTTPS is completely disabled",
    "stapling OCSP",
];

const WHY_IDLE: &str = "seconds Caddy keeps an idle client connection (TCP and QUIC); too \
    short and the load pays a handshake per request";

#[derive(Debug, Clone, Copy)]
pub struct Caddy;

impl ServerType for Caddy {
    fn name(&self) -> &'static str {
        "caddy"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![NEEDS]
    }

    fn program(&self, _programs: &Programs) -> Result<PathBuf, LabError> {
        super::require(&super::find_program(&["caddy"]), NEEDS)
    }

    /// Defaults are Caddy 2.6's own: every protocol, 5 minutes idle, no header read
    /// limit, 1 MiB of headers, no access log.
    fn parameters(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::choice(
                "protocols",
                PROTOCOL_SETS,
                "h1+h2+h3",
                "servers { protocols }",
                "HTTP versions served: h3 is HTTP/3 over QUIC on the same port's UDP",
            ),
            ParamSpec::int(
                "idle_timeout",
                (1, 3_600),
                300,
                "idle_timeout",
                "seconds an idle client connection is kept (Caddy's default 5m)",
            ),
            ParamSpec::int(
                "read_header_timeout",
                (0, 3_600),
                0,
                "read_header_timeout",
                "seconds to read a request's headers (0: no limit, Caddy's default)",
            ),
            ParamSpec::int(
                "max_header_bytes",
                (1_024, 16 * 1_048_576),
                1_048_576,
                "max_header_bytes",
                "largest request header block accepted",
            ),
            ParamSpec::switch(
                "access_log",
                false,
                "log",
                "write one JSON line per request to caddy-access.log (off: Caddy's default)",
            ),
        ]
    }

    /// Caddy's JSON: `"name": value` inside the HTTP server.
    fn directive_line(&self, spec: &ParamSpec, value: &str) -> String {
        match spec.name.as_str() {
            "protocols" => format!("\"protocols\": {:?}", value.split('+').collect::<Vec<_>>()),
            "idle_timeout" | "read_header_timeout" => format!("\"{}\": \"{value}s\"", spec.name),
            "access_log" => format!("\"logs\": {{}}  # access log {value}"),
            _ => format!("\"{}\": {value}", spec.directive),
        }
    }

    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let dir = c.dir();
        let protocols: Vec<String> = c
            .get("protocols")
            .map(|v| v.to_string())
            .unwrap_or_else(|| PROTOCOL_SETS[0].to_string())
            .split('+')
            .map(str::to_string)
            .collect();
        let error_log = dir.join("caddy-error.log");
        let mut server = json!({
            "listen": c.addresses(),
            "protocols": protocols,
            "idle_timeout": format!("{}s", c.int("idle_timeout")),
            "max_header_bytes": c.int("max_header_bytes"),
            "automatic_https": {"disable": true},
            "tls_connection_policies": [{"certificate_selection": {"any_tag": ["lab"]}}],
            "routes": [{"handle": [
                {"handler": "vars", "root": c.layout.docroot.display().to_string()},
                {"handler": "file_server"}
            ]}],
        });
        let header = c.int("read_header_timeout");
        if header > 0 {
            server["read_header_timeout"] = json!(format!("{header}s"));
        }
        let mut logs = json!({
            "default": {
                "writer": {"output": "file", "filename": error_log.display().to_string()},
                "level": "INFO",
                "exclude": ["http.log.access"],
            }
        });
        if c.switch("access_log") {
            server["logs"] = json!({"default_logger_name": "access"});
            logs["access"] = json!({
                "writer": {"output": "file", "filename": dir.join(ACCESS_LOG).display().to_string()},
                "encoder": {"format": "json"},
                "include": ["http.log.access.access"],
            });
        }
        let config = json!({
            "admin": {"disabled": true, "config": {"persist": false}},
            "storage": {"module": "file_system", "root": dir.join("caddy-data").display().to_string()},
            "logging": {"logs": logs},
            "apps": {
                "http": {"servers": {"lab": server}},
                "tls": {"certificates": {"load_files": [{
                    "certificate": dir.join(CERT_FILE).display().to_string(),
                    "key": dir.join(KEY_FILE).display().to_string(),
                    "tags": ["lab"],
                }]}},
            },
        });
        let text = serde_json::to_string_pretty(&config)
            .map_err(|e| LabError::Inconsistent(format!("rendering caddy.json: {e}")))?;
        let config_file = dir.join(CONFIG_FILE);
        let with_config = |verb: &str| -> Vec<OsString> {
            vec![verb.into(), "--config".into(), config_file.clone().into()]
        };
        Ok(RenderedServer {
            configs: vec![(CONFIG_FILE.to_string(), text)],
            plan: ServerPlan {
                label: c.label(self),
                component: super::Component::Caddy,
                program: c.program(self),
                check_args: with_config("validate"),
                run_args: with_config("run"),
                config_file: config_file.clone(),
                error_log,
                output_log: dir.join("caddy.out"),
                port: c.port,
                stop_signal: libc::SIGTERM,
                readiness: ready_on(true, "/empty.gif"),
            },
        })
    }

    /// Caddy keeps its data and config under HOME and the XDG directories (and the
    /// smallstep library it links makes `$HOME/.step`): all of them in the private
    /// directory, so nothing is left in the account's home.
    fn environment(&self, dir: &Path) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", dir.join("caddy-home")),
            ("XDG_DATA_HOME", dir.join("caddy-data")),
            ("XDG_CONFIG_HOME", dir.join("caddy-config")),
        ]
    }

    fn tuning_space(&self, prefix: &str, _cores: i64, _proxy: bool) -> Vec<Tunable> {
        vec![Tunable::int(
            format!("{prefix}idle_timeout"),
            5,
            600,
            true,
            WHY_IDLE,
        )]
    }

    /// Caddy logs JSON lines: a `"level"` of warn or worse, counted by `"msg"`.
    fn log_messages(&self, plan: &ServerPlan) -> Vec<LogMessage> {
        let mut counts: Vec<LogMessage> = Vec::new();
        for path in [&plan.error_log, &plan.output_log] {
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let level = v["level"].as_str().unwrap_or_default();
                if !matches!(level, "warn" | "error" | "panic" | "fatal") {
                    continue;
                }
                let message = v["msg"].as_str().unwrap_or_default().to_string();
                if EXPECTED_WARNINGS.iter().any(|w| message.starts_with(w)) {
                    continue;
                }
                let level = if level == "warn" { "warn" } else { "error" };
                match counts
                    .iter_mut()
                    .find(|m| m.message == message && m.level == level)
                {
                    Some(m) => m.count += 1,
                    None => counts.push(LogMessage {
                        server: plan.label.clone(),
                        level: level.to_string(),
                        message,
                        count: 1,
                    }),
                }
            }
        }
        counts
    }
}
