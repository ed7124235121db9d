//! Postfix: a private mail server for the lab (seed 004's postal benchmark). Its tunable
//! parameters (defaults: Postfix 3.7's built-in values, `postconf -d`), its config in a lab
//! stack (`files`: main.cf and master.cf in the private directory, its own queue, data
//! directory, log and Maildirs), and what of it is worth tuning. Its `master` runs in the
//! foreground straight from the daemon directory with `-c DIR`: `postfix -c DIR start`
//! refuses a config directory the system's main.cf does not list in
//! `alternate_config_directories`, but that check only guards set-gid programs (Postfix's
//! `mail_conf_suck`, when `unsafe()`), so the root-started master and its daemons read the
//! private directory and nothing of /etc/postfix is read for the config or changed. Ready
//! when the SMTP port accepts; stopped with SIGTERM (`postfix abort`: the master passes it
//! to its children). Mail is delivered by `virtual(8)` only: `local(8)` delivers to system
//! accounts' home directories, which a private instance cannot make its own.

pub mod files;
pub(crate) mod watch;

use super::{
    Component, Programs, Readiness, RenderContext, RenderedServer, Requirement, ServerPlan,
    ServerType,
};
use crate::params::{ParamKind, ParamSpec, Settings, Value};
use crate::vocab::{Tunable, TuneRange};
use crate::LabError;
use std::path::{Path, PathBuf};
use webtune_model::server::LogMessage;

use files::PostfixFiles;

pub const NEEDS: Requirement = Requirement {
    program: "postconf",
    package: "postfix",
};

/// Where Debian and other distributions keep Postfix's daemons (`daemon_directory`).
const DAEMON_DIRS: [&str; 4] = [
    "/usr/lib/postfix/sbin",
    "/usr/libexec/postfix",
    "/usr/lib/postfix",
    "/usr/local/libexec/postfix",
];

/// The lab's parameter that sizes the generated mailbox list (not a Postfix setting).
pub const MAILBOXES: &str = "mailboxes";
/// The lab's parameter that picks the lookup table type of the mailbox map.
pub const MAP_TYPE: &str = "map_type";

const WHY_PROCS: &str = "most processes per service (smtpd, cleanup, virtual): sessions \
    and deliveries at once (Postfix tuning guide: raise it for many parallel clients)";
const WHY_COUNT: &str = "sessions one client may hold; the lab's load comes from one \
    address, so it caps the parallel sessions (\"too many connections\")";
const WHY_ACTIVE: &str = "messages the queue manager keeps in memory: the active queue \
    that feeds delivery";
const WHY_FLOW: &str = "how long smtpd waits per message when delivery lags: trades \
    acceptance latency for a queue that does not grow";
const WHY_VIRTUAL: &str = "parallel deliveries into the mailboxes of the lab's one domain";

#[derive(Debug, Clone, Copy)]
pub struct Postfix;

/// The unit a time parameter takes in main.cf.
fn unit(name: &str) -> &'static str {
    match name {
        "in_flow_delay" | "smtpd_timeout" => "s",
        _ => "",
    }
}

/// The daemon directory holding `master`, if Postfix is installed.
pub fn daemon_directory() -> Option<PathBuf> {
    DAEMON_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("master").is_file())
}

/// Is the lmdb map type available (Debian's postfix-lmdb adds it to dynamicmaps.cf.d)?
fn has_lmdb() -> bool {
    let mut texts =
        vec![std::fs::read_to_string("/etc/postfix/dynamicmaps.cf").unwrap_or_default()];
    if let Ok(entries) = std::fs::read_dir("/etc/postfix/dynamicmaps.cf.d") {
        for e in entries.flatten() {
            texts.push(std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    texts
        .iter()
        .flat_map(|t| t.lines())
        .any(|l| l.split_whitespace().next() == Some("lmdb"))
}

impl ServerType for Postfix {
    fn name(&self) -> &'static str {
        "postfix"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![NEEDS]
    }

    fn program(&self, _programs: &Programs) -> Result<PathBuf, LabError> {
        match (daemon_directory(), super::find_program(&["postconf"])) {
            (Some(dir), Some(_)) => Ok(dir.join("master")),
            _ => Err(LabError::MissingProgram {
                program: "postfix".into(),
                hint: format!("install the Debian package {}", NEEDS.package),
            }),
        }
    }

    fn parameters(&self) -> Vec<ParamSpec> {
        let int = ParamSpec::int;
        vec![
            int(
                "default_process_limit",
                (1, 10_000),
                100,
                "default_process_limit",
                "most processes of each service (smtpd sessions, cleanup, virtual deliveries)",
            ),
            int(
                "smtpd_client_connection_count_limit",
                (0, 100_000),
                50,
                "smtpd_client_connection_count_limit",
                "most sessions one client address may hold (0 = no limit); the lab's load is one client",
            ),
            int(
                "smtpd_client_connection_rate_limit",
                (0, 10_000_000),
                0,
                "smtpd_client_connection_rate_limit",
                "most connects per client per minute (0 = no limit)",
            ),
            int(
                "qmgr_message_active_limit",
                (1, 10_000_000),
                20_000,
                "qmgr_message_active_limit",
                "most messages in the active queue (in memory, being delivered)",
            ),
            int(
                "in_flow_delay",
                (0, 10),
                1,
                "in_flow_delay",
                "seconds smtpd waits per message when the queue manager lags (0 = never)",
            ),
            int(
                "smtpd_timeout",
                (1, 3600),
                300,
                "smtpd_timeout",
                "seconds smtpd waits for a client's command or data",
            ),
            int(
                "virtual_destination_concurrency_limit",
                (1, 10_000),
                20,
                "virtual_destination_concurrency_limit",
                "parallel deliveries to one domain (the lab's mailboxes are one domain)",
            ),
            ParamSpec::choice(
                MAP_TYPE,
                &["hash", "btree", "lmdb"],
                "hash",
                "virtual_mailbox_maps",
                "lookup table of the mailbox map: Berkeley DB hash or btree, or lmdb (package postfix-lmdb)",
            ),
            ParamSpec {
                name: MAILBOXES.to_string(),
                kind: ParamKind::Int {
                    min: 1,
                    max: 1_000_000,
                    keyword: None,
                },
                default: Value::Int(1000),
                directive: "(lab) generated mailboxes",
                meaning: "mailboxes userN@lab.test the lab generates (seed 004: 15000); users.txt lists them",
            },
        ]
    }

    fn directive_line(&self, spec: &ParamSpec, value: &str) -> String {
        match spec.name.as_str() {
            MAILBOXES => format!("# {value} mailboxes in virtual_mailbox_maps and users.txt"),
            MAP_TYPE => format!("virtual_mailbox_maps = {value}:DIR/postfix/etc/vmailbox"),
            name => format!("{} = {value}{}", spec.directive, unit(name)),
        }
    }

    fn check_settings(&self, prefix: &str, settings: &Settings) -> Result<(), LabError> {
        let map = settings.get(&format!("{prefix}{MAP_TYPE}"));
        if map == Some(Value::Word("lmdb")) && !has_lmdb() {
            return Err(LabError::Inconsistent(format!(
                "{prefix}{MAP_TYPE}=lmdb: this Postfix has no lmdb map type (install the Debian package postfix-lmdb)"
            )));
        }
        Ok(())
    }

    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let files = PostfixFiles::in_dir(c.dir());
        let mut values = Vec::new();
        for spec in self.parameters() {
            let value = c.get(&spec.name).unwrap_or(spec.default);
            values.push((spec.name.clone(), value.to_string()));
        }
        let configs = files::render_configs(&files, c.port, &values)?;
        let program = c.program(self);
        Ok(RenderedServer {
            configs,
            plan: ServerPlan {
                label: c.label(self),
                component: Component::Postfix,
                program,
                check_args: Vec::new(),
                run_args: vec!["-c".into(), files.config_dir.clone().into(), "-s".into()],
                config_file: files.config_dir.join("main.cf"),
                error_log: files.maillog.clone(),
                output_log: files.root.join("master.out"),
                port: c.port,
                stop_signal: libc::SIGTERM,
                readiness: Readiness::TcpAccept,
            },
        })
    }

    fn prepare(&self, plan: &ServerPlan, dir: &Path) -> Result<(), LabError> {
        let _ = plan;
        files::prepare(&PostfixFiles::in_dir(dir))
    }

    fn tuning_space(&self, prefix: &str, cores: i64, _proxy: bool) -> Vec<Tunable> {
        let p = |n: &str| format!("{prefix}{n}");
        vec![
            Tunable::int(
                p("default_process_limit"),
                10,
                (cores * 200).clamp(100, 1000),
                true,
                WHY_PROCS,
            ),
            Tunable::int(
                p("smtpd_client_connection_count_limit"),
                10,
                1000,
                true,
                WHY_COUNT,
            ),
            Tunable::int(
                p("qmgr_message_active_limit"),
                1000,
                100_000,
                true,
                WHY_ACTIVE,
            ),
            Tunable::int(p("in_flow_delay"), 0, 2, false, WHY_FLOW),
            Tunable::int(
                p("virtual_destination_concurrency_limit"),
                5,
                200,
                true,
                WHY_VIRTUAL,
            ),
            Tunable {
                name: p(MAP_TYPE),
                range: TuneRange::Choice(if has_lmdb() {
                    vec!["hash".into(), "lmdb".into()]
                } else {
                    vec!["hash".into(), "btree".into()]
                }),
                why: "the mailbox map is looked up by smtpd for every recipient and by virtual for every delivery",
            },
        ]
    }

    fn log_messages(&self, plan: &ServerPlan) -> Vec<LogMessage> {
        watch::log_messages(&plan.label, &plan.error_log)
    }
}
