//! The lab's listings: `lab stacks` (what each stack needs and whether it is installed),
//! `lab params` (every parameter, and the tuner's default space) and `lab config` (the
//! rendered configs and command lines, with example paths and ports).

use super::forum;
use anyhow::bail;
use std::path::PathBuf;
use webtune_lab::servers::Programs;
use webtune_lab::{settings_for, Layout, StackKind};

pub(super) fn stacks_text() -> String {
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
    out.push_str(&forum::requirements_text());
    out.push_str(&format!(
        "{:<20} a private file system (tmpfs, ext4, xfs on a loop image) for webtune fs's workload\n{:<20} needs: root, mkfs.ext4 (e2fsprogs), mkfs.xfs (xfsprogs)\n",
        webtune_lab::fsys::NAME,
        ""
    ));
    out
}

pub(super) fn params_text(stack: StackKind) -> String {
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
pub(super) fn fs_params_text() -> String {
    use webtune_lab::fsys::params;
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
    use webtune_lab::tuning::{default_space, TuneRange};
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
pub(super) fn params_table(params: &[webtune_lab::ParamSpec]) -> String {
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

pub(super) fn config_text(stack: StackKind, set: &[String]) -> anyhow::Result<String> {
    if stack == StackKind::External {
        bail!("the external stack has no config: the lab does not start it");
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
    let rendered = webtune_lab::render(stack, &settings, &layout, &Programs::discover())?;
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
        let conf = config_text(
            StackKind::from_name("nginx-apache").unwrap(),
            &["backend.MaxRequestWorkers=4".to_string()],
        )
        .unwrap();
        assert!(conf.contains("MaxRequestWorkers 4"));
        assert!(conf.contains("proxy_pass http://backend;"));
    }
}
