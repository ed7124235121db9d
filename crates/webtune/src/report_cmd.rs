//! `webtune report`: render any JSON webtune writes — a result (`webtune.run/1`), a sweep
//! (`webtune.sweep/1`), a capacity search (`webtune.capacity/1`) or a tune report
//! (`webtune.tune/1`) — in the formats that fit it, and write the HTML report.

use crate::output::{self, Outputs};
use anyhow::{bail, Context};
use std::path::PathBuf;
use webtune_model::capacity::{CapacityResult, CAPACITY_SCHEMA};
use webtune_model::sweep::{SweepResult, SWEEP_SCHEMA};
use webtune_model::RunResult;
use webtune_report::{render, Format};
use webtune_tune::report::{TuneReport, SCHEMA as TUNE_SCHEMA};

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

/// What a saved file holds.
pub enum Saved {
    Run(Box<RunResult>),
    Sweep(Box<SweepResult>),
    Capacity(Box<CapacityResult>),
    Tune(Box<TuneReport>),
}

impl Saved {
    /// What the file holds and the command that wrote it, for errors.
    fn describe(&self) -> &'static str {
        match self {
            Saved::Run(_) => "a run's result",
            Saved::Sweep(_) => "a sweep (one result per level)",
            Saved::Capacity(_) => "a capacity search (webtune capacity / lab capacity --json)",
            Saved::Tune(_) => "a tune report (webtune tune --json)",
        }
    }
}

/// Only the schema tag of a saved file (the rest is skipped, not built).
#[derive(serde::Deserialize)]
struct SchemaTag {
    schema: Option<String>,
}

/// Read a saved run or sweep (at most `MAX_SAVED_BYTES`), with a one-line error naming the
/// file.
pub fn read_saved(path: &std::path::Path) -> anyhow::Result<Saved> {
    let text = crate::inputs::read_saved_text(path)?;
    let schema = serde_json::from_str::<SchemaTag>(&text)
        .ok()
        .and_then(|t| t.schema)
        .unwrap_or_default();
    let name = || path.display().to_string();
    Ok(match schema.as_str() {
        s if s == SWEEP_SCHEMA => {
            Saved::Sweep(Box::new(SweepResult::from_json(&text).with_context(name)?))
        }
        s if s == CAPACITY_SCHEMA => Saved::Capacity(Box::new(
            serde_json::from_str(&text)
                .with_context(|| format!("{}: not a readable {CAPACITY_SCHEMA}", name()))?,
        )),
        s if s == TUNE_SCHEMA => Saved::Tune(Box::new(
            serde_json::from_str(&text)
                .with_context(|| format!("{}: not a readable {TUNE_SCHEMA}", name()))?,
        )),
        _ => Saved::Run(Box::new(RunResult::from_json(&text).with_context(name)?)),
    })
}

/// Read a saved single run (not a sweep).
pub fn read_run(path: &std::path::Path) -> anyhow::Result<RunResult> {
    match read_saved(path)? {
        Saved::Run(r) => Ok(*r),
        other => bail!(
            "{} is {}; give a single run's result",
            path.display(),
            other.describe()
        ),
    }
}

fn render_sweep(sweep: &SweepResult, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => webtune_report::sweep::render_sweep_text(sweep),
        Format::Csv => webtune_report::sweep::render_sweep_csv(sweep),
        Format::Json => sweep.to_json_pretty() + "\n",
        Format::Html => webtune_report::sweep::render_sweep_html(sweep),
        Format::Ab | Format::HttpLoad => {
            bail!("the {format} layout shows one run; a sweep renders as text, csv, json or html")
        }
    })
}

/// A capacity search or a tune report: text, json or html (they have no ab, http_load or
/// csv layout).
fn render_other(saved: &Saved, format: Format) -> anyhow::Result<String> {
    Ok(match (saved, format) {
        (Saved::Capacity(c), Format::Text) => webtune_report::capacity::render_capacity_text(c),
        (Saved::Capacity(c), Format::Html) => webtune_report::capacity::render_capacity_html(c),
        (Saved::Capacity(c), Format::Json) => c.to_json_pretty() + "\n",
        (Saved::Tune(t), Format::Text) => t.render_text(),
        (Saved::Tune(t), Format::Html) => webtune_tune::html::render_html(t),
        (Saved::Tune(t), Format::Json) => t.to_json_pretty() + "\n",
        (other, format) => bail!(
            "the {format} format does not fit {}: it renders as text, json or html",
            other.describe()
        ),
    })
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
    let (text, html) = match &saved {
        Saved::Run(r) => (
            render(r, args.format),
            args.html
                .as_ref()
                .map(|_| webtune_report::html::render_html(r)),
        ),
        Saved::Sweep(s) => (
            render_sweep(s, args.format)?,
            args.html
                .as_ref()
                .map(|_| webtune_report::sweep::render_sweep_html(s)),
        ),
        other => (
            render_other(other, args.format)?,
            match &args.html {
                Some(_) => Some(render_other(other, Format::Html)?),
                None => None,
            },
        ),
    };
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
