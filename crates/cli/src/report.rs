//! `webtune report`'s flags, and `--format`'s parser.

use std::path::PathBuf;
use webtune_model::format::Format;

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
