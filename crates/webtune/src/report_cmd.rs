//! `webtune report`: render any JSON webtune writes — a result (`webtune.run/1`), a sweep
//! (`webtune.sweep/1`), a capacity search (`webtune.capacity/1`) or a tune report
//! (`webtune.tune/1`) — in the formats that fit it (`webtune_report::saved::Saved::render`),
//! and write the HTML report.

use crate::inputs::read_saved;
use crate::output::{self, Outputs};
use webtune_cli::report::ReportArgs;

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    output::check_all([
        ("--html", args.html.as_deref()),
        ("-o", args.output.as_deref()),
    ])?;
    // Nothing is measured here: a signal while the file is read (a FIFO, a huge file) or
    // rendered exits at once.
    let at_once = crate::signals::exit_at_once();
    let saved = read_saved(&args.file)?;
    let text = saved.render(args.format)?;
    let html = args.html.as_ref().map(|_| saved.html());
    drop(at_once);
    let mut outputs = Outputs::new();
    if let (Some(dest), Some(html)) = (&args.html, html) {
        outputs.file("--html", dest, &html);
    }
    match &args.output {
        Some(dest) => outputs.file("-o", dest, &text),
        None => outputs.stdout(&text),
    }
    Ok(outputs.exit_code(if crate::signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else {
        crate::exit::SUCCESS
    }))
}
