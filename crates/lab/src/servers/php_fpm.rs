//! php-fpm: its pool's parameters (defaults from Debian 12's
//! /etc/php/8.2/fpm/pool.d/www.conf), its config in a lab stack (one pool on a loopback
//! port), and what of it is worth tuning. Ready when its port accepts; stopped with
//! SIGQUIT (php-fpm's graceful shutdown).

use super::{
    require, Component, ImportedConfig, Programs, Readiness, RenderContext, RenderedServer,
    Requirement, ServerPlan, ServerType,
};
use crate::params::{ParamKind, ParamSpec, Value};
use crate::vocab::{fill, Completion, Tunable, TuneRange};
use crate::LabError;
use std::path::{Path, PathBuf};

const TEMPLATE: &str = include_str!("../../templates/php-fpm.conf");

pub const NEEDS: Requirement = Requirement {
    program: "php-fpm",
    package: "php-fpm",
};

const WHY_CHILDREN: &str = "PHP processes: requests run at once (seed 000's rule: about two \
    busy processes per core behind a proxy)";
const WHY_PM: &str = "how php-fpm sizes its pool: static avoids forking under load";

#[derive(Debug, Clone, Copy)]
pub struct PhpFpm;

impl ServerType for PhpFpm {
    fn name(&self) -> &'static str {
        "php-fpm"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![NEEDS]
    }

    fn program(&self, programs: &Programs) -> Result<PathBuf, LabError> {
        require(&programs.php_fpm, NEEDS)
    }

    /// The start and spare servers size a `dynamic` pool only.
    fn inert_rules(&self) -> Vec<crate::params::InertRule> {
        [
            "pm.start_servers",
            "pm.min_spare_servers",
            "pm.max_spare_servers",
        ]
        .into_iter()
        .map(|p| crate::params::InertRule::new(p, "pm", &["static", "ondemand"]))
        .collect()
    }

    /// A pool's ini syntax: `name = value`.
    fn directive_line(&self, spec: &ParamSpec, value: &str) -> String {
        format!("{} = {value}", spec.directive)
    }

    fn parameters(&self) -> Vec<ParamSpec> {
        let int = ParamSpec::int;
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
                (1, 100_000),
                5,
                "pm.max_children",
                "most PHP processes (requests running PHP at once)",
            ),
            int(
                "pm.start_servers",
                (1, 100_000),
                2,
                "pm.start_servers",
                "PHP processes at startup (dynamic)",
            ),
            int(
                "pm.min_spare_servers",
                (1, 100_000),
                1,
                "pm.min_spare_servers",
                "fewest idle PHP processes (dynamic)",
            ),
            int(
                "pm.max_spare_servers",
                (1, 100_000),
                3,
                "pm.max_spare_servers",
                "most idle PHP processes (dynamic)",
            ),
            int(
                "pm.max_requests",
                (0, 100_000_000),
                0,
                "pm.max_requests",
                "requests a PHP process serves before it is replaced (0 = never)",
            ),
        ]
    }

    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let mut vars = c.vars(self);
        vars.insert(
            "user_group".into(),
            match &c.account {
                Some((user, group)) => format!("user = {user}\ngroup = {group}"),
                None => String::new(),
            },
        );
        let dir = c.dir();
        let config = dir.join("php-fpm.conf");
        let text = fill(TEMPLATE, &vars)?;
        Ok(RenderedServer {
            configs: vec![("php-fpm.conf".to_string(), text)],
            plan: ServerPlan {
                error_log: dir.join("php-fpm-error.log"),
                ..plan(c.label(self), c.program(self), config, dir, c.port)
            },
        })
    }

    /// The copy's pools listen on loopback ports of its own (see `import::php_fpm`); the
    /// load reaches the first one through the lab's nginx.
    fn imported_plan(&self, import: &ImportedConfig) -> Result<ServerPlan, LabError> {
        Ok(ServerPlan {
            error_log: import.error_log(),
            ..plan(
                "php-fpm (your config)".into(),
                self.program(import.programs)?,
                import.config.clone(),
                import.dir,
                import.port,
            )
        })
    }

    fn tuning_space(&self, prefix: &str, cores: i64, _proxy: bool) -> Vec<Tunable> {
        vec![
            Tunable::int(
                format!("{prefix}pm.max_children"),
                1,
                (cores * 32).clamp(8, 256),
                true,
                WHY_CHILDREN,
            ),
            Tunable {
                name: format!("{prefix}pm"),
                range: TuneRange::Choice(vec!["static".into(), "dynamic".into()]),
                why: WHY_PM,
            },
        ]
    }

    fn busy_processes_parameter(&self, _proxy: bool) -> Option<&'static str> {
        Some("pm.max_children")
    }

    /// Start and spare servers within max_children (php-fpm refuses them above it).
    fn complete(&self, prefix: &str, c: &mut Completion) {
        let p = |n: &str| format!("{prefix}{n}");
        if let Some(children) = c.value(&p("pm.max_children")) {
            for spare in [
                "pm.start_servers",
                "pm.min_spare_servers",
                "pm.max_spare_servers",
            ] {
                if let Some(d) = c.default_of(&p(spare)) {
                    c.set_default(p(spare), d.min(children));
                }
            }
        }
    }
}

/// php-fpm on `config` in the foreground (`-F`), checked with `-t`, ready when its port
/// accepts, stopped gracefully with SIGQUIT; its output in `dir`.
fn plan(label: String, program: PathBuf, config: PathBuf, dir: &Path, port: u16) -> ServerPlan {
    ServerPlan {
        label,
        component: Component::PhpFpm,
        program,
        check_args: vec!["-t".into(), "-y".into(), config.clone().into()],
        run_args: vec!["-F".into(), "-y".into(), config.clone().into()],
        config_file: config,
        error_log: dir.join("php-fpm-error.log"),
        output_log: dir.join("php-fpm.out"),
        port,
        stop_signal: libc::SIGQUIT,
        readiness: Readiness::TcpAccept,
    }
}
