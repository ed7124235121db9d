//! `webtune advise`: flags → `webtune_advise::advise` → text on stdout, JSON and suggested
//! config files where asked. Read-only: it changes no config file and no sysctl.

mod verify;

use crate::output::{self, Outputs};
use webtune_cli::advise::AdviseArgs;

pub fn run(args: AdviseArgs) -> anyhow::Result<i32> {
    if let Some(root) = &args.root {
        if !root.is_dir() {
            anyhow::bail!("--root {}: not a directory", root.display());
        }
    }
    if let Some(v) = &args.mysql_version {
        if let Err(why) = webtune_advise::facts::database_release(Some(v), None, false) {
            anyhow::bail!("{why}");
        }
    }
    if let Some(dest) = &args.json {
        output::check("--json", dest)?;
    }
    if !args.bench.is_empty() && !args.verify {
        anyhow::bail!("bench flags after -- go with --verify");
    }
    // `--pairs N` is the sequential protocol's own flag: asking for N pairs asks for it.
    let interleave = match args.protocol.as_deref() {
        Some("sequential") => None,
        Some(_) => Some(()),
        None => args.pairs.is_none().then_some(()),
    }
    .map(|()| {
        // Both copies are restarted within the comparison: a start effect is not advice.
        webtune_search::interleave::Settings::restartable(
            webtune_search::interleave::block::Metric::Throughput,
            args.verify_budget.as_secs_f64(),
        )
        .map_err(|e| anyhow::anyhow!("--verify-budget: {e}"))
    })
    .transpose()?;
    // Bench flags are checked before anything is read or run.
    let bench = args
        .verify
        .then(|| verify::check(&args.bench))
        .transpose()?;
    // The live counters are read first: they are bounds in the plan, and tell the
    // database's release and data size. Reading measures nothing: a signal exits at once.
    let at_once = crate::signals::exit_at_once();
    let live = args.live.then(|| {
        webtune_advise::live::read(&webtune_advise::live::LiveInputs {
            mysql_socket: Some(args.mysql_socket.clone()),
            apache_status: Some(args.apache_status.clone()),
            nginx_status: Some(args.nginx_status.clone()),
            timeout: args.live_timeout,
        })
    });
    drop(at_once);
    let inputs = webtune_advise::Inputs {
        apache: args.apache,
        nginx: args.nginx,
        php_fpm: args.php_fpm,
        mysql: args.mysql,
        result: args.result,
        discover: !args.no_discover,
        root: args.root.clone(),
        host: webtune_advise::host_facts::HostChoice {
            cores: args.cores,
            ram_kib: args.ram_kib,
            from: args.host_from.clone(),
        },
        mysql_version: args.mysql_version.clone(),
        live,
    };
    // Reading the configs and the host measures nothing: a signal while they are read (a
    // FIFO, a huge file) exits at once.
    let at_once = crate::signals::exit_at_once();
    let mut advice = webtune_advise::advise(&inputs)?;
    drop(at_once);
    let patch_options = webtune_advise::output::PatchOptions::for_advice(&advice);
    if args.write_patch.is_some() {
        // Each server checks its patched private copy; what it refuses is not written.
        advice.patch_checks = webtune_advise::check::check_patches(
            &mut advice,
            patch_options,
            &webtune_tuner::advise_verify::lab_checker,
        );
    }
    let verified = match &bench {
        Some(bench) => Some(verify::run(
            &advice,
            bench,
            args.pairs
                .map_or(webtune_tuner::advise_verify::DEFAULT_PAIRS, |p| p as usize),
            &args.data,
            interleave,
        )?),
        None => None,
    };
    let json_to_stdout = args.json.as_deref() == Some("-");
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.json {
        let mut value = serde_json::to_value(&advice)?;
        if let (Some(v), Some(map)) = (&verified, value.as_object_mut()) {
            map.insert("verify".into(), v.json.clone());
        }
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        outputs.file("--json", dest, &text);
    }
    if !json_to_stdout {
        outputs.stdout(&webtune_advise::output::text(&advice));
        if let Some(v) = &verified {
            outputs.stdout(&v.text);
        }
    }
    if let Some(dir) = &args.write_patch {
        let written = webtune_advise::output::write_patch(&advice, dir, patch_options)?;
        if !json_to_stdout {
            let refused = advice.findings.iter().any(|f| f.patch.is_some());
            if written.is_empty() {
                outputs.stdout(&format!(
                    "\nNothing written to {}: {}.\n",
                    dir.display(),
                    if refused {
                        "every change was refused by the server's check or could not be checked (see \"not written\" above)"
                    } else {
                        "no finding changes a directive"
                    }
                ));
            }
            for w in written {
                outputs.stdout(&format!("wrote {}\n", w.display()));
            }
        }
    }
    let interrupted =
        verified.as_ref().is_some_and(|v| v.interrupted) || crate::signals::stop_requested();
    Ok(outputs.exit_code(if interrupted {
        crate::exit::INTERRUPTED
    } else {
        crate::exit::SUCCESS
    }))
}
