//! `webtune http_load`: a drop-in for http_load. Its single-dash options and URL file with
//! http_load's meaning (`webtune_model::dropin::http_load`: the parser, the URL mix, the
//! run), and its output layout (`webtune_report::http_load`) with webtune's percentiles
//! beneath.

use crate::exit;
use crate::flags::bench::available_cores;
use crate::output::{self, Outputs};
use crate::running::run_spec_quiet;
use anyhow::Context;
use webtune_cli::http_load::HttpLoadArgs;
use webtune_engine::Workload;
use webtune_model::dropin::http_load;

pub fn run(args: HttpLoadArgs) -> anyhow::Result<i32> {
    let options = http_load::parse_options(&args.raw)?;
    output::check_all([
        ("-json", options.json.as_deref()),
        ("-html", options.html.as_deref()),
    ])?;
    // Nothing is measured yet: a signal while the inputs are read (a FIFO) exits at once.
    let at_once = crate::signals::exit_at_once();
    let path = &options.url_file;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read URL file {path}"))?;
    let urls = http_load::url_list(&text, path)?;
    // Several URLs: a scenario that picks among them at random, built as a value.
    let workload = if urls.len() > 1 {
        let (origin, requests) = http_load::url_mix(&urls)?;
        Workload::url_mix(&origin, &requests, "http_load URL mix")
            .map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        Workload::request()
    };
    let spec = http_load::to_spec(&options, &urls, available_cores())?;
    drop(at_once);
    let (result, interrupted) = run_spec_quiet(&spec, &workload, "", false)?;
    let mut outputs = Outputs::new();
    if let Some(dest) = &options.html {
        outputs.file("-html", dest, &webtune_report::html::render_html(&result));
    }
    if let Some(dest) = &options.json {
        outputs.file("-json", dest, &(result.to_json_pretty() + "\n"));
    }
    let mut report = webtune_report::http_load::render_http_load(&result);
    if interrupted {
        report.push_str("INTERRUPTED — partial result\n");
    }
    outputs.stdout(&report);
    Ok(outputs.exit_code(if interrupted {
        exit::INTERRUPTED
    } else {
        exit::SUCCESS
    }))
}
