//! What the lab says about itself: `lab stacks` (what each stack needs and whether it is
//! installed, the forum's and the file system's needs too), `lab params` (every parameter,
//! and the tuner's default space) and `lab config` (the rendered configs and command lines,
//! with example paths and ports), `lab data`'s dataset, and what `lab clean` did. The
//! command prints these texts as they are.

use crate::forum::dataset::Dataset;
use crate::params::ParamSpec;
use crate::registry::CleanReport;
use crate::render::{render, Layout};
use crate::servers::Programs;
use crate::stacks::{settings_for, StackKind};
use crate::LabError;
use std::path::{Path, PathBuf};

/// `lab stacks`: every stack, what it needs and where this host has it.
pub fn stacks_text() -> String {
    let programs = Programs::discover();
    let mut out = String::new();
    for stack in StackKind::all() {
        out.push_str(&format!("{:<20} {}\n", stack.name(), stack.summary()));
        let needs: Vec<String> = stack
            .requirements()
            .iter()
            .map(|r| match programs.locate(r) {
                Some(path) => format!("{} ({})", path.display(), r.package),
                None => format!("{} MISSING: apt-get install {}", r.program, r.package),
            })
            .collect();
        if needs.is_empty() {
            out.push_str(&format!("{:<20} needs: nothing (a server you run)\n", ""));
        } else {
            out.push_str(&format!("{:<20} needs: {}\n", "", needs.join(", ")));
        }
    }
    out.push_str(&forum_requirements_text());
    out.push_str(&format!(
        "{:<20} a private file system (tmpfs, ext4, xfs on a loop image) for webtune fs's workload\n{:<20} needs: root, mkfs.ext4 (e2fsprogs), mkfs.xfs (xfsprogs)\n",
        crate::filesystem::NAME,
        ""
    ));
    out
}

/// `lab params NAME`: a stack's parameters, the forum database's (`mariadb`) or the lab
/// file system's (`fs`).
pub fn params_of(name: &str) -> Result<String, LabError> {
    if crate::trial::is_database(name) {
        return Ok(params_table(&crate::forum::dbparams::parameters()));
    }
    if name == crate::filesystem::NAME {
        return Ok(fs_params_text());
    }
    Ok(params_text(StackKind::from_name(name)?))
}

/// A stack's parameters and the tuner's default space for it.
pub fn params_text(stack: StackKind) -> String {
    let params = stack.parameters();
    if params.is_empty() {
        return format!(
            "{} has no parameters: the lab does not configure it\n",
            stack.name()
        );
    }
    let mut out = params_table(&params);
    out.push_str(&tuning_space_text(stack));
    out
}

/// `lab params fs`: the file system's parameters, which are private to the run and which
/// are host-wide, and what does nothing for which kind.
fn fs_params_text() -> String {
    use crate::filesystem::params;
    let mut out = params_table(&params::parameters());
    out.push_str(
        "\nEverything but vm.* is private to the run: the file system is made in the lab's \
         directory and mounted\nin a mount namespace of its own, on a loop device of its own. \
         vm.* are HOST-WIDE: refused without\n--host-sysctl; with it, put back at the end \
         (and by `webtune lab clean` after a crash).\n\nDo nothing (accepted, not applied):\n",
    );
    for r in params::inert_rules() {
        out.push_str(&format!(
            "  {:<26} when {}={}\n",
            r.param,
            r.when,
            r.values.join("|")
        ));
    }
    out.push_str(
        "\nSeed 004 (FreeBSD, postmark): soft updates, noatime and vfs.vmiodirenable made the \
         tuned host 40-860% faster;\nMFS (memory) was the reference: here tmpfs, ext4 \
         data=writeback / no journal, atime=noatime, read-ahead.\n",
    );
    out
}

/// The default search space of `webtune tune STACK` (without --param): each parameter, the
/// range searched and why it is there.
fn tuning_space_text(stack: StackKind) -> String {
    use crate::tuning::{default_space, TuneRange};
    let space = default_space(stack, false, webtune_engine::available_cores());
    if space.is_empty() {
        return String::new();
    }
    let forum = if stack.has_php() {
        "; with --app forum also db.max_connections and db.back_log"
    } else {
        ""
    };
    let mut out = format!(
        "\nTuned by default (`webtune tune {}` without --param{forum}):\n",
        stack.name()
    );
    let width = space.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in &space {
        let range = match &t.range {
            TuneRange::Int { lo, hi, log } => {
                format!("{lo}..{hi}{}", if *log { " (log)" } else { "" })
            }
            TuneRange::Choice(words) => words.join(","),
        };
        out.push_str(&format!("  {:<width$}  {range:<16} {}\n", t.name, t.why));
    }
    out
}

/// Parameters as a table: name, type, range, default, directive, meaning.
pub fn params_table(params: &[ParamSpec]) -> String {
    let rows: Vec<[String; 6]> = params
        .iter()
        .map(|p| {
            [
                p.name.clone(),
                p.kind.type_name().to_string(),
                p.kind.allowed(),
                p.default.to_string(),
                p.directive.to_string(),
                p.meaning.to_string(),
            ]
        })
        .collect();
    let header = ["name", "type", "range", "default", "directive", "meaning"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows.iter()) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 5 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `lab config`: the configs and command lines of `stack` with `set`, at an example
/// directory and example ports (each start picks its own).
pub fn config_text(stack: StackKind, set: &[String]) -> Result<String, LabError> {
    if stack == StackKind::External {
        return Err(LabError::Inconsistent(
            "the external stack has no config: the lab does not start it".into(),
        ));
    }
    let settings = settings_for(stack, set)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let base = PathBuf::from(format!("/tmp/webtune-lab-{uid}"));
    let layout = Layout {
        dir: base.join(format!("{}-example", stack.name())),
        docroot: base.join(format!("{}-example.www", stack.name())),
        ports: (0..stack.components().len() as u16)
            .map(|i| 8080 + i)
            .collect(),
        privileged: uid == 0,
        addresses: 1,
    };
    let rendered = render(stack, &settings, &layout, &Programs::discover())?;
    let mut out = format!(
        "# {} with {} (directory and ports are examples; each start picks its own)\n",
        stack.name(),
        settings.describe_changes()
    );
    for (name, text) in &rendered.configs {
        out.push_str(&format!("\n# ===== {name} =====\n{text}"));
    }
    out.push_str("\n# ===== commands =====\n");
    for plan in &rendered.servers {
        let args: Vec<String> = plan
            .run_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        out.push_str(&format!(
            "# {}: {} {}\n",
            plan.label,
            plan.program.display(),
            args.join(" ")
        ));
    }
    Ok(out)
}

/// The `lab stacks` lines for `--app forum`: what it needs besides a PHP stack.
fn forum_requirements_text() -> String {
    let needs: Vec<String> = crate::forum::requirements()
        .into_iter()
        .map(|(what, found, package)| match found {
            Some(path) => format!("{} ({package})", path.display()),
            None => format!("{what} MISSING: apt-get install {package}"),
        })
        .collect();
    format!(
        "{:<20} seed 003's PHP forum on a private MariaDB, on any stack with PHP\n{:<20} needs: {}\n",
        "--app forum",
        "",
        needs.join(", ")
    )
}

/// What `lab clean` says it did in `root` (`report`), one line each: what it reaped, the
/// directories kept on request, that there was nothing to clean, the entries it left
/// alone because webtune did not make them (said once), and the `live` stacks of
/// running webtune processes it did not touch.
pub fn clean_text(report: &CleanReport, root: &Path, live: usize) -> String {
    let mut text = String::new();
    for line in &report.reaped {
        text.push_str(&format!("reaped {line}\n"));
    }
    for dir in &report.kept {
        text.push_str(&format!(
            "kept {} (asked with --keep; remove it yourself)\n",
            dir.display()
        ));
    }
    if report.is_empty() {
        text.push_str(&format!("nothing to clean in {}\n", root.display()));
    }
    let foreign = report.foreign.len();
    if foreign > 0 {
        let name = |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let shown: Vec<String> = report.foreign.iter().take(3).map(name).collect();
        let (entries, them) = if foreign == 1 {
            ("entry", "it")
        } else {
            ("entries", "them")
        };
        let more = if foreign > shown.len() { ", …" } else { "" };
        text.push_str(&format!(
            "left alone {foreign} {entries} of {} that webtune did not make ({}{more}): the \
             registry does not record {them}\n",
            root.display(),
            shown.join(", "),
        ));
    }
    if live > 0 {
        text.push_str(&format!(
            "{live} stack(s) of running webtune processes left alone\n"
        ));
    }
    text
}

/// `lab data`: the forum's data and where its database's data directory is.
pub fn dataset_text(d: &Dataset) -> String {
    let s = &d.summary;
    format!(
        "forum data: {} posts, {} topics (longest {} posts), {} forums in {} categories, {} users; seed {}\n\
         checksum {:016x} over {:.1} MB of generated rows (schema v{})\n\
         MariaDB {} data directory: {} ({:.0} MB), {}\n",
        s.shape.posts,
        s.shape.topics,
        s.longest_topic_posts,
        s.shape.forums,
        s.shape.categories,
        s.shape.users,
        s.seed,
        s.checksum,
        s.bytes as f64 / 1e6,
        s.schema_version,
        d.server_version,
        d.dir.display(),
        d.data_bytes as f64 / 1e6,
        if d.built_now {
            format!("built now in {:.1} s", d.build_seconds)
        } else {
            format!("from the cache (built in {:.1} s)", d.build_seconds)
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_stacks_list_everything() {
        let text = params_text(StackKind::from_name("apache-prefork").unwrap());
        assert!(text.contains("MaxRequestWorkers"));
        assert!(text.contains("1..=20000"));
        assert!(text.contains("Tuned by default"), "{text}");
        assert!(text.contains("seed 000"), "the space says why: {text}");
        assert!(stacks_text().contains("nginx-apache"));
        assert!(stacks_text().contains("--app forum"));
        assert!(params_of("mariadb").unwrap().contains("db.max_connections"));
        assert!(params_of("fs").unwrap().contains("HOST-WIDE"));
        assert!(params_of("ngnix")
            .unwrap_err()
            .to_string()
            .contains("nginx"));
        assert!(config_text(StackKind::External, &[]).is_err());
        let conf = config_text(
            StackKind::from_name("nginx-apache").unwrap(),
            &["backend.MaxRequestWorkers=4".to_string()],
        )
        .unwrap();
        assert!(conf.contains("MaxRequestWorkers 4"));
        assert!(conf.contains("proxy_pass http://backend;"));
    }

    #[test]
    fn a_clean_says_what_it_did_and_what_it_left_alone() {
        let root = Path::new("/tmp/lab");
        let nothing = clean_text(&CleanReport::default(), root, 0);
        assert_eq!(nothing, "nothing to clean in /tmp/lab\n");
        let report = CleanReport {
            reaped: vec!["nginx (pid 7)".into()],
            killed: vec![7],
            kept: vec![root.join("nginx-1-0")],
            foreign: ["a", "b", "c", "d"].iter().map(|n| root.join(n)).collect(),
            ..CleanReport::default()
        };
        let text = clean_text(&report, root, 2);
        assert!(
            text.starts_with("reaped nginx (pid 7)\nkept /tmp/lab/nginx-1-0 "),
            "{text}"
        );
        assert!(!text.contains("nothing to clean"), "{text}");
        assert!(text.contains("left alone 4 entries of /tmp/lab that webtune did not make (a, b, c, …): the registry does not record them"), "{text}");
        assert!(
            text.ends_with("2 stack(s) of running webtune processes left alone\n"),
            "{text}"
        );
    }
}
