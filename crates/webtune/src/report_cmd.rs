//! `webtune report`: render any JSON webtune writes — a result (`webtune.run/1`), a sweep
//! (`webtune.sweep/1`), a capacity search (`webtune.capacity/1`) or a tune report
//! (`webtune.tune/1`) — in the formats that fit it (`webtune_report::saved::Saved::render`),
//! and write the HTML report.

use crate::inputs::read_saved;
use crate::output::{self, Outputs};
use std::path::PathBuf;
use webtune_report::Format;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune report result.json                      # the text summary\n  \
    webtune report result.json --format ab          # as ab would have printed it\n  \
    webtune report result.json --html report.html   # self-contained HTML with plots\n  \
    webtune report sweep.json --format csv")]
pub struct ReportArgs {
    /// A JSON file webtune wrote: a run's result, a sweep, a capacity search or a tune report.
    pub file: PathBuf,
    /// Output format: text, ab, http_load, json, csv or html.
    #[arg(short = 'f', long = "format", default_value = "text", value_parser = parse_format)]
    pub format: Format,
    /// Also write the HTML report to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// Write the rendering to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
}

/// clap value parser for `--format`.
pub fn parse_format(text: &str) -> Result<Format, String> {
    text.parse::<Format>().map_err(|e| e.to_string())
}

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
