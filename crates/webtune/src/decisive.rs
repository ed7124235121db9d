//! The decisive comparison's run-and-report step, which `compare --live` and `lab compare`
//! both end with: the blocks run by `webtune_tuner::interleaved`, the report (text, `--json`
//! webtune.compare-live/1, `--html`) and the exit status. The protocol, its statistics and
//! its words are `webtune_search::interleave`'s. No command owns it.

use crate::output::{self, Outputs};
use anyhow::anyhow;
use webtune_search::interleave::render::Report;
use webtune_search::interleave::Settings;
use webtune_tuner::interleaved::{self, ArmLoad};

/// Run the two arms block by block and report (see `report`).
pub fn measure_and_report(
    names: (&str, &str),
    arms: [ArmLoad; 2],
    settings: Settings,
    (json, html): (Option<&str>, Option<&str>),
    restart: &mut dyn FnMut(usize) -> Result<[interleaved::Restarted; 2], String>,
    notes: Vec<String>,
) -> anyhow::Result<i32> {
    output::check_all([("--json", json), ("--html", html)])?;
    let control = crate::signals::stop_token();
    let outcome = interleaved::run(arms, settings, &control, restart, &mut |line| {
        eprintln!("webtune: {line}")
    })
    .map_err(|e| anyhow!(e))?;
    report(names, &outcome, (json, html), notes)
}

/// Print the comparison's report and write `--json`; the exit status: 0 decided, 1
/// undecided, 130 interrupted.
pub fn report(
    names: (&str, &str),
    outcome: &interleaved::Outcome,
    (json, html): (Option<&str>, Option<&str>),
    notes: Vec<String>,
) -> anyhow::Result<i32> {
    let mut report = Report::new(
        names,
        &outcome.protocol,
        outcome.elapsed_s,
        outcome.interrupted,
    );
    report.notes = notes;
    let mut outputs = Outputs::new();
    if let Some(dest) = json {
        let text = serde_json::to_string_pretty(&report)? + "\n";
        outputs.file("--json", dest, &text);
    }
    if let Some(dest) = html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::interleave_html::render(&report),
        );
    }
    if json != Some("-") {
        // `--json -` is the whole of stdout: the text would break it.
        outputs.stdout(&report.text());
    }
    let own = if outcome.interrupted || crate::signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else if report.decided() {
        crate::exit::SUCCESS
    } else {
        crate::exit::UNDECIDED
    };
    Ok(outputs.exit_code(own))
}
