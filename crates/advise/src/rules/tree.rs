//! What the trees load and run, beside their numbers: Apache 2.4 with no MPM loaded where
//! none can be compiled in (it refuses to start; an MPM compiled in, or not known, is not
//! "none"), MPM tuning blocks for an MPM that is not loaded (`<IfModule
//! mpm_event_module>` under prefork: settings that never apply; a block that only loads a
//! module by the MPM is not tuning), and nginx with one worker process on a multi-core
//! host.

use super::{at, Layers};
use crate::change::set;
use crate::finding::{Finding, Severity};
use webtune_conf::apache::ApacheConfig;
use webtune_conf::apache::ApacheVersion::V24;
use webtune_conf::config::NoteLevel;

const MPMS: &[&str] = &["prefork", "worker", "event"];

/// The MPMs' own directives (mpm_common and the MPM pages).
const MPM_TUNING: &[&str] = &[
    "StartServers",
    "MinSpareServers",
    "MaxSpareServers",
    "MinSpareThreads",
    "MaxSpareThreads",
    "ServerLimit",
    "ThreadLimit",
    "ThreadsPerChild",
    "MaxRequestWorkers",
    "MaxClients",
    "MaxConnectionsPerChild",
    "MaxRequestsPerChild",
    "AsyncRequestWorkerFactor",
    "ThreadStackSize",
    "ListenBacklog",
];

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(a) = l.apache {
        // With no MPM loaded, Apache 2.4 refuses to start unless one is compiled in: known
        // when httpd itself was asked (`httpd -l`), or when the tree is a distribution's
        // (Debian's mods-enabled, RHEL's conf.modules.d), whose httpd builds every MPM as
        // a module. Otherwise (an upstream build, configure's default: event compiled
        // in; a copied tree) the MPM is unknown, not missing. A tree whose includes were
        // not all read may load it in one of those (the reader's note says so instead).
        let unread = a.parsed.notes.iter().any(|n| n.level == NoteLevel::Warning);
        let packaged = a.parsed.files.iter().find(|f| {
            let t = f.to_string_lossy();
            t.contains("/mods-enabled/") || t.contains("/conf.modules.d/")
        });
        let known_none = match (&l.facts.apache_compiled_in, packaged) {
            (Some(k), _) => Some(format!(
                "httpd has no MPM compiled in ({}: {})",
                k.from,
                k.value.join(" ")
            )),
            (None, Some(f)) => Some(format!(
                "a distribution's tree ({}): its httpd loads every MPM as a module",
                f.display()
            )),
            (None, None) => None,
        };
        if a.mpm().is_none() && !unread && known_none.is_none() {
            out.push(
                Finding::new("apache.mpm.unknown", Severity::Info, "apache2")
                    .directives(&["LoadModule"])
                    .values("no MPM module loaded, and whether one is compiled in is not known", "`httpd -V` on the server tells (\"Server MPM\"); run webtune advise there, without --root")
                    .why(format!(
                        "{}. An httpd built without --enable-mpms-shared has its MPM compiled in (configure's default: event in 2.4, prefork in 2.2), so the tree needs no LoadModule for it; which one it is decides how MaxRequestWorkers, ThreadsPerChild and KeepAlive are judged, so none of them is sized.",
                        super::mpm_unknown(l)
                    ))
                    .evidence(format!("{} LoadModule lines read in {} files, none an mpm_*_module", a.modules.len(), a.parsed.files.len()))
                    .source("Apache 2.4 manual, \"Multi-Processing Modules\" and configure's --with-mpm / --enable-mpms-shared"),
            );
        }
        if let (None, V24, false, Some(why)) = (a.mpm(), a.dialect.version, unread, known_none) {
            out.push(
                Finding::new("apache.mpm.none", Severity::Critical, "apache2")
                    .directives(&["LoadModule"])
                    .values("no MPM module loaded", "LoadModule mpm_event_module (Debian: a2enmod mpm_event), or mpm_prefork_module with mod_php")
                    .why(format!("Apache 2.4 refuses to start without an MPM (\"AH00534: Configuration error: No MPM loaded\"), and {why}. Nothing MPM-specific is sized."))
                    .evidence(format!("{} LoadModule lines read in {} files, none an mpm_*_module", a.modules.len(), a.parsed.files.len()))
                    .source("Apache 2.4 manual, \"Multi-Processing Modules\" (\"the MPM must be loaded … with LoadModule\"); apache2 -t"),
            );
        }
        out.extend(dead_mpm_blocks(a));
    }
    if let Some(n) = l.nginx {
        let cores = l.host.cores;
        let d = n.at_level("worker_processes", &[]);
        let one = d.is_none_or(|d| d.value() == "1");
        if cores > 1 && one {
            out.push(
                Finding::new("nginx.worker_processes", Severity::Warn, "nginx")
                    .directives(&["worker_processes"])
                    .values(format!("worker_processes 1 on {cores} cores"), "worker_processes auto;")
                    .why(format!(
                        "Each nginx worker is one single-threaded event loop on one core: 1 worker uses 1 of the {cores} cores, the others stay idle for nginx however busy it is. auto starts one per core ({cores})."
                    ))
                    .evidence(at(d, "worker_processes", 1))
                    .evidence(format!("host: {cores} cores"))
                    .source("nginx manual, worker_processes (\"setting it to the number of available CPU cores would be a good start … auto\")")
                    .change(Some(set(d, &n.parsed.main, None, "worker_processes auto;".into()))),
            );
        }
    }
    out
}

/// `<IfModule mpm_X_module>` / `<IfModule mpm_X.c>` / `<IfModule X.c>` blocks (X an MPM
/// other than the one loaded) that hold directives: the reader skips them as Apache does,
/// so they are found in the files' text.
fn dead_mpm_blocks(a: &ApacheConfig) -> Vec<Finding> {
    let Some((loaded, lm)) = a.mpm() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for file in &a.parsed.files {
        if seen.contains(file) {
            continue;
        }
        seen.push(file.clone());
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let mut open: Option<(String, usize, Vec<String>)> = None;
        let mut depth = 0;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            let lower = t.to_ascii_lowercase();
            if let Some((mpm, start, names)) = open.as_mut() {
                if lower.starts_with("<ifmodule")
                    || lower.starts_with("<directory")
                    || lower.starts_with("<location")
                {
                    depth += 1;
                } else if lower.starts_with("</") {
                    if depth == 0 {
                        if !names.is_empty() {
                            out.push(dead_block(a, loaded, &lm.at, mpm, file, *start, names));
                        }
                        open = None;
                    } else {
                        depth -= 1;
                    }
                } else if !t.is_empty() && !t.starts_with('#') {
                    // Only the MPM's own tuning: RHEL's 01-cgi.conf loads mod_cgid or
                    // mod_cgi by the MPM in such blocks, which is not dead tuning.
                    if let Some(name) = t.split_whitespace().next() {
                        if MPM_TUNING.iter().any(|d| d.eq_ignore_ascii_case(name)) {
                            names.push(name.to_string());
                        }
                    }
                }
                continue;
            }
            let Some(arg) = lower
                .strip_prefix("<ifmodule")
                .and_then(|r| r.trim().strip_suffix('>'))
                .map(str::trim)
            else {
                continue;
            };
            if arg.starts_with('!') {
                continue;
            }
            let bare = arg
                .trim_start_matches("mpm_")
                .trim_end_matches("_module")
                .trim_end_matches(".c");
            if MPMS.contains(&bare) && bare != loaded {
                open = Some((bare.to_string(), i + 1, Vec::new()));
                depth = 0;
            }
        }
    }
    out
}

fn dead_block(
    a: &ApacheConfig,
    loaded: &str,
    loaded_at: &str,
    mpm: &str,
    file: &std::path::Path,
    line: usize,
    names: &[String],
) -> Finding {
    // The settings the loaded MPM really runs with.
    let live: Vec<String> = names
        .iter()
        .filter_map(|n| {
            a.get(n)
                .map(|d| format!("{} {}: {}", d.name, d.joined(), d.at()))
        })
        .collect();
    let severity = if live.is_empty() {
        Severity::Warn
    } else {
        Severity::Info
    };
    let mut f = Finding::new("apache.mpm.dead_block", severity, "apache2")
        .directives(&names.iter().map(String::as_str).collect::<Vec<_>>())
        .values(
            format!("<IfModule mpm_{mpm}_module> at {}:{line}: {}", file.display(), names.join(", ")),
            format!("tune the {loaded} MPM's own settings (or load mpm_{mpm}); remove the dead block"),
        )
        .why(format!(
            "The {loaded} MPM is loaded, so Apache skips this block: its {} directives never apply. {}",
            names.len(),
            if live.is_empty() {
                format!("The {loaded} MPM runs with its defaults for them: whoever edited this block tuned nothing.")
            } else {
                format!("The {loaded} MPM runs with the settings listed as evidence.")
            }
        ))
        .evidence(format!("<IfModule mpm_{mpm}_module>: {}:{line}", file.display()))
        .evidence(format!("LoadModule mpm_{loaded}_module: {loaded_at}"))
        .source("Apache 2.4 manual, <IfModule> (\"only processed if the module is loaded\"); apache2buddy (reads the loaded MPM's block)");
    for l in live {
        f = f.evidence(l);
    }
    f
}
