//! The advice as text (grouped by severity, ending with the recommended directives per
//! file), and as suggested config files (`--write-patch DIR`): copies of the files a
//! finding would change, the changed lines marked with a comment. The originals are
//! never touched.

use crate::change::Change;
use crate::error::AdviseError;
use crate::finding::Severity;
use crate::Advice;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which Apache the patch is written for: 2.2 names MaxRequestWorkers MaxClients and
/// MaxConnectionsPerChild MaxRequestsPerChild, and refuses the 2.4 names. The names are
/// `conf`'s (`ApacheVersion::name_for`), the version the one the reader detected.
pub use webtune_conf::apache::ApacheVersion as ApacheDialect;

/// How patches are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct PatchOptions {
    pub apache: ApacheDialect,
}

impl PatchOptions {
    /// The options the advice's own trees call for: the Apache version its reader detected.
    pub fn for_advice(a: &Advice) -> PatchOptions {
        PatchOptions {
            apache: a.apache_version.unwrap_or_default(),
        }
    }
}

/// A directive line in the dialect of the Apache it is for.
fn apache_line(text: &str, dialect: ApacheDialect) -> String {
    match text.split_once(' ') {
        Some((name, rest)) => format!("{} {rest}", dialect.name_for(name)),
        None => text.to_string(),
    }
}

fn gib(kib: u64) -> String {
    format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0)
}

/// The advice as text.
pub fn text(a: &Advice) -> String {
    let mut s = String::new();
    let h = &a.host;
    let _ = writeln!(
        s,
        "host: {} cores, RAM {} ({} available), somaxconn {}, local ports {}, file-max {}",
        h.cores,
        gib(h.mem_total_kib),
        gib(h.mem_available_kib),
        h.sysctls
            .get("net.core.somaxconn")
            .map_or("?", String::as_str),
        h.sysctls
            .get("net.ipv4.ip_local_port_range")
            .map_or("?", String::as_str),
        h.sysctls.get("fs.file-max").map_or("?", String::as_str),
    );
    for srv in &h.servers {
        let _ = writeln!(
            s,
            "running: {} pid {} ({} workers, {:.1} MiB PSS per worker, open files {})",
            srv.kind,
            srv.master_pid,
            srv.workers,
            srv.pss_per_worker_kib().unwrap_or(0) as f64 / 1024.0,
            srv.nofile_soft.map_or("?".to_string(), |v| v.to_string())
        );
    }
    if a.configs.is_empty() {
        let _ = writeln!(s, "read: no config (none given, none found)");
    }
    for c in &a.configs {
        let _ = writeln!(
            s,
            "read: {} {} ({}, {} files){}",
            c.server,
            c.main.display(),
            c.found,
            c.files.len(),
            c.dialect
                .as_ref()
                .map_or(String::new(), |d| format!("; {d}"))
        );
    }
    if !h.judged_for.is_empty() {
        let _ = writeln!(s, "judged for another machine: {}", h.judged_for);
    }
    for n in &a.notes {
        let _ = writeln!(s, "note: {n}");
    }
    for c in &a.configs {
        for n in &c.notes {
            let level = match n.level {
                webtune_conf::config::NoteLevel::Warning => "warning",
                webtune_conf::config::NoteLevel::Note => "note",
            };
            let _ = writeln!(s, "{level}: {}: {n}", c.server);
        }
    }
    if let Some(e) = &a.evidence {
        let _ = writeln!(s, "evidence: {}", e.cite());
    }
    if a.findings.is_empty() {
        let _ = writeln!(s, "\nNo findings: nothing to change in what was read.");
        return s;
    }
    for sev in [Severity::Critical, Severity::Warn, Severity::Info] {
        let group: Vec<_> = a.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{} ({})", sev.name().to_uppercase(), group.len());
        for f in group {
            let _ = writeln!(
                s,
                "  [{}] {}: {}",
                f.id,
                f.component,
                f.directives.join(", ")
            );
            let _ = writeln!(s, "    current:     {}", f.current);
            let _ = writeln!(s, "    recommended: {}", f.recommended);
            let _ = writeln!(s, "    why:         {}", f.why);
            for (i, e) in f.evidence.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "    {} {e}",
                    if i == 0 {
                        "evidence:   "
                    } else {
                        "            "
                    }
                );
            }
            let _ = writeln!(s, "    source:      {}", f.source);
            if let Some(i) = a.incomplete(&f.id) {
                let _ = writeln!(
                    s,
                    "    incomplete:  may be: not read: the includes at {}",
                    i.because.join(", ")
                );
            }
        }
    }
    if !a.plan.knobs.is_empty() {
        let _ = writeln!(
            s,
            "\nPlan (one value per directive, with every bound on it):"
        );
        for p in &a.plan.knobs {
            let head = match (p.value, &p.conflict) {
                (Some(v), _) if v == p.current => format!("{} (unchanged)", p.text(v)),
                (Some(v), _) => format!("{} (now {}{})", p.text(v), p.current, p.unit),
                (None, Some(why)) => format!("{}: CONFLICT, not written: {why}", p.directive),
                (None, None) => p.directive.clone(),
            };
            let _ = writeln!(s, "  {}: {head}", p.server);
            for b in &p.bounds {
                let who = if b.structural && b.finding.is_empty() {
                    "server".to_string()
                } else if b.structural {
                    format!("{}, a limit", b.finding)
                } else {
                    b.finding.clone()
                };
                let _ = writeln!(
                    s,
                    "    {:<22} {} [{who}; {}]",
                    format!("{}{}", b.bound.describe(), p.unit),
                    b.reason,
                    b.source
                );
            }
            if let Some(why) = &p.patch {
                let _ = writeln!(s, "    not written: {why}");
            }
        }
    }
    for f in a.findings.iter().filter(|f| f.patch.is_some()) {
        let _ = writeln!(
            s,
            "\n[{}] not written: {}",
            f.id,
            f.patch.as_deref().unwrap_or("")
        );
    }
    for c in &a.patch_checks {
        let _ = writeln!(
            s,
            "\npatch check: {} {}: {} ({}){}",
            c.server,
            c.main.display(),
            c.outcome,
            c.command,
            if c.message.is_empty() {
                String::new()
            } else {
                format!(": {}", c.message)
            }
        );
        for w in &c.warnings {
            let _ = writeln!(s, "  the server warned: {w}");
        }
    }
    let per_file = changes(a, PatchOptions::for_advice(a), true);
    let refused = |id: &str| {
        a.findings.iter().any(|f| f.id == id && f.patch.is_some())
            || a.plan
                .knobs
                .iter()
                .any(|k| k.id() == id && k.patch.is_some())
    };
    if !per_file.is_empty() {
        let _ = writeln!(s, "\nRecommended directives per file:");
        for (file, changes) in per_file {
            let _ = writeln!(s, "  {}", file.display());
            for (id, c) in changes {
                let place = match (c.line, &c.section) {
                    (Some(l), _) => format!("line {l}:"),
                    (None, Some(sec)) => format!("add in {sec}:"),
                    (None, None) => "add:".to_string(),
                };
                let mark = if refused(&id) { " (not written)" } else { "" };
                let _ = writeln!(s, "    {place:<12} {:<40} [{id}]{mark}", c.text);
            }
        }
    }
    s
}

/// Every change, grouped by file, with the finding it comes from: the plan's values
/// first, then the findings' other changes; a change the server's check refused is left
/// out, and so is a planned directive in conflict.
pub fn changes_per_file(
    a: &Advice,
    opts: PatchOptions,
) -> BTreeMap<PathBuf, Vec<(String, Change)>> {
    changes(a, opts, false)
}

/// The changes, with or without those the server's check refused (the text lists them,
/// marked; the patch leaves them out).
fn changes(
    a: &Advice,
    opts: PatchOptions,
    with_refused: bool,
) -> BTreeMap<PathBuf, Vec<(String, Change)>> {
    let mut out: BTreeMap<PathBuf, Vec<(String, Change)>> = BTreeMap::new();
    let apache_files: Vec<&PathBuf> = a
        .configs
        .iter()
        .filter(|c| c.server == "apache2")
        .flat_map(|c| &c.files)
        .collect();
    // A planned value the server refused is not written under any finding's name either.
    let refused: Vec<&Change> = a
        .plan
        .knobs
        .iter()
        .filter(|p| p.patch.is_some() && !with_refused)
        .filter_map(|p| p.change.as_ref())
        .collect();
    let mut sources: Vec<(String, Vec<Change>)> = Vec::new();
    for p in a
        .plan
        .knobs
        .iter()
        .filter(|p| with_refused || p.patch.is_none())
    {
        if let Some(c) = &p.change {
            sources.push((p.id(), vec![c.clone()]));
        }
    }
    for f in a
        .findings
        .iter()
        .filter(|f| with_refused || f.patch.is_none())
    {
        sources.push((f.id.clone(), f.changes.clone()));
    }
    for (id, changes) in sources {
        for mut c in changes {
            if refused.contains(&&c) {
                continue;
            }
            if apache_files.contains(&&c.file) {
                c.text = apache_line(&c.text, opts.apache);
            }
            let list = out.entry(c.file.clone()).or_default();
            // The first finding to change a line wins (findings are sorted most severe first).
            if c.line.is_some() && list.iter().any(|(_, x)| x.line == c.line) {
                continue;
            }
            if list.iter().any(|(_, x)| x.text == c.text) {
                continue;
            }
            list.push((id.clone(), c));
        }
    }
    out
}

/// Write suggested copies of every file a finding changes under `dir`, at the file's own
/// path below it (`DIR/etc/apache2/apache2.conf`; for a copied tree, its path in the
/// tree, below `--root`). Returns the files written.
pub fn write_patch(
    a: &Advice,
    dir: &Path,
    opts: PatchOptions,
) -> Result<Vec<PathBuf>, AdviseError> {
    let mut written = Vec::new();
    for (file, changes) in changes_per_file(a, opts) {
        let original = webtune_conf::limits::read_file(&file)?;
        let comment = if a
            .configs
            .iter()
            .any(|c| c.server == "php-fpm" && c.files.contains(&file))
        {
            ";"
        } else {
            "#"
        };
        let patched = patch_text(&original, &changes, comment);
        // A copied tree's file lands at the tree's own path (`DIR/etc/nginx/nginx.conf`),
        // not at where the copy lies on this host.
        let relative = a
            .facts
            .root
            .as_deref()
            .and_then(|r| file.strip_prefix(r).ok())
            .unwrap_or_else(|| file.strip_prefix("/").unwrap_or(&file));
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| AdviseError::Write {
                path: parent.to_path_buf(),
                error: e,
            })?;
        }
        std::fs::write(&target, patched).map_err(|e| AdviseError::Write {
            path: target.clone(),
            error: e,
        })?;
        written.push(target);
    }
    Ok(written)
}

/// Apply changes to a file's text: replaced lines keep their indentation and get a
/// comment above saying what they were; additions go right after their section's header
/// (`[mysqld]`, `events {`) when the file has it, else at the end.
pub fn patch_text(original: &str, changes: &[(String, Change)], comment: &str) -> String {
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    // Insertions: (after line index, text), applied from the bottom up.
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    let mut appended: Vec<String> = Vec::new();
    let mut prepended: Vec<String> = Vec::new();
    for (id, c) in changes {
        match c.line {
            Some(l) if l >= 1 && l <= lines.len() => {
                let old = lines[l - 1].clone();
                let indent: String = old.chars().take_while(|c| c.is_whitespace()).collect();
                // A rewrite may be several lines (log_slow_queries → slow_query_log = 1 and
                // slow_query_log_file): each keeps the line's indentation.
                let text: Vec<String> = c.text.lines().map(|t| format!("{indent}{t}")).collect();
                lines[l - 1] = format!(
                    "{indent}{comment} webtune advise [{id}]: was: {}\n{}",
                    old.trim(),
                    text.join("\n")
                );
            }
            _ => {
                let sec = c.section.as_deref();
                let fragment = sec == Some(webtune_conf::ini::FRAGMENT_POOL);
                // A block header: `[www]`, `events {`, `upstream app {` (a path of nested
                // blocks, `http > server`, is not one line).
                let header = sec.filter(|_| !fragment).and_then(|sec| {
                    lines.iter().position(|l| {
                        let t = l.trim();
                        t == format!("[{sec}]")
                            || (!sec.contains(" > ")
                                && t.strip_prefix(sec).is_some_and(|r| r.trim() == "{"))
                    })
                });
                let mut new = vec![format!("{comment} webtune advise [{id}]: added")];
                new.extend(c.text.lines().map(str::to_string));
                if fragment {
                    // A pool fragment's keys come before any section of the file.
                    match lines.iter().position(|l| l.trim_start().starts_with('[')) {
                        Some(0) => prepended.extend(new),
                        Some(first) => inserts.push((first - 1, new)),
                        None => appended.extend(new),
                    }
                    continue;
                }
                match (header, &c.section) {
                    (Some(h), _) => inserts.push((h, new)),
                    (None, Some(sec))
                        if (!sec.contains(' ') && comment != "#") || sec == "mysqld" =>
                    {
                        appended.push(format!("[{sec}]"));
                        appended.extend(new);
                    }
                    (None, Some(sec)) => {
                        appended.push(format!(
                            "{comment} webtune advise [{id}]: add inside {sec}: {}",
                            c.text
                        ));
                    }
                    (None, None) => appended.extend(new),
                }
            }
        }
    }
    inserts.sort_by_key(|x| std::cmp::Reverse(x.0));
    for (after, new) in inserts {
        let indent = if comment == ";" || lines[after].trim_start().starts_with('[') {
            ""
        } else {
            "    "
        };
        let block: Vec<String> = new.into_iter().map(|l| format!("{indent}{l}")).collect();
        lines.splice(after + 1..after + 1, block);
    }
    if !prepended.is_empty() {
        lines.splice(0..0, prepended);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    if !appended.is_empty() {
        out.push('\n');
        out.push_str(&appended.join("\n"));
        out.push('\n');
    }
    out
}
