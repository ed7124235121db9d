//! `webtune ab`: a drop-in for ApacheBench. ab's flags (clap) mapped to ab's meaning
//! (`webtune_model::dropin::ab`: the run, the refused options, `-v 2`'s words), ab's output
//! layout (`webtune_report::ab`), `-e` and `-g` files as ab writes them.

use crate::exit;
use crate::flags::bench::available_cores;
use crate::output::{self, Outputs};
use crate::running::run_spec_watched;
use webtune_cli::ab::AbArgs;
use webtune_model::dropin::ab::{self, AbOptions};
use webtune_model::RunSpec;
use webtune_report::ab::{
    ab_gnuplot, ab_percentile_csv, render_ab, split_url, AbHeartbeat, AbLayout,
};

/// What the binary makes of `AbArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait AbArgsExt {
    /// The ab options webtune refuses, given or not, in `ab::UNSUPPORTED`'s order.
    fn unsupported_given(&self) -> [bool; 12];
    /// ab's options that shape the run, as given.
    fn options(&self) -> AbOptions;
    /// The run ab would make with these options (`webtune_model::dropin::ab`).
    fn to_spec(&self) -> anyhow::Result<RunSpec>;
}

impl AbArgsExt for AbArgs {
    fn unsupported_given(&self) -> [bool; 12] {
        [
            self.unsupported_b.is_some(),
            self.unsupported_bind.is_some(),
            self.unsupported_proxy_auth.is_some(),
            self.unsupported_proxy.is_some(),
            self.unsupported_html_tables,
            self.unsupported_table_attr.is_some(),
            self.unsupported_tr_attr.is_some(),
            self.unsupported_td_attr.is_some(),
            self.unsupported_sni,
            self.unsupported_cipher.is_some(),
            self.unsupported_tls_protocol.is_some(),
            self.unsupported_client_cert.is_some(),
        ]
    }

    fn options(&self) -> AbOptions {
        AbOptions {
            url: self.url.clone(),
            requests: self.requests,
            concurrency: self.concurrency,
            timelimit: self.timelimit,
            timeout: self.timeout,
            keepalive: self.keepalive,
            headers: self.headers.clone(),
            cookies: self.cookies.clone(),
            auth: self.auth.clone(),
            postfile: self.postfile.clone(),
            putfile: self.putfile.clone(),
            content_type: self.content_type.clone(),
            method: self.method.clone(),
            head: self.head,
        }
    }

    fn to_spec(&self) -> anyhow::Result<RunSpec> {
        let read = |path: &std::path::Path| {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        Ok(self.options().to_spec(available_cores(), read)?)
    }
}

/// `-v 2`: one exchange, made before the run on a connection of its own and not counted in
/// the result (ab prints the head of every response), in ab's words.
fn show_exchange(spec: &RunSpec) -> anyhow::Result<String> {
    let shown = webtune_engine::show::exchange_once(spec)?;
    let response = shown.response_head.as_deref().map_err(String::as_str);
    Ok(ab::exchange_text(&spec.method, &shown.request, response))
}

pub fn run(args: AbArgs) -> anyhow::Result<i32> {
    let version = env!("CARGO_PKG_VERSION");
    if args.version {
        return Ok(output::print_only(&format!(
            "This is webtune {version}, ab-compatible front end (ApacheBench 2.3 layout)\n"
        )));
    }
    ab::refuse_unsupported(args.unsupported_given())?;
    // Nothing is measured yet: a signal while the inputs are read (a FIFO) exits at once.
    let at_once = crate::signals::exit_at_once();
    let spec = args.to_spec()?;
    drop(at_once);
    output::check_all([
        ("-e", args.csv.as_deref()),
        ("-g", args.gnuplot.as_deref()),
        ("--json", args.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    for line in ab::differences(&args.options(), args.verbosity) {
        eprintln!("{line}");
    }
    let (host, _, _) = split_url(&spec.url);
    // A failing stdout is remembered and the run goes on: the files still get written.
    let mut outputs = Outputs::new();
    outputs.stdout(&format!(
        "This is webtune {version}, ab-compatible front end (ApacheBench 2.3 layout)\n\n"
    ));
    // As ab: up to 150 requests (or with -q) the dots and "done" follow on the same stdout
    // line; above, "Completed N requests" at each tenth and "Finished N requests" go to
    // stderr (-t counts as ab's 50,000 requests).
    let mut heartbeat = AbHeartbeat::new(ab::progress_requests(&spec), args.quiet);
    let small = heartbeat.is_none();
    if small {
        outputs.stdout(&format!("Benchmarking {host} (be patient)"));
    } else {
        outputs.stdout(&format!("Benchmarking {host} (be patient)\n"));
    }
    if args.verbosity >= 2 {
        // ab: "(be patient)...INFO: GET header == " on one line when it prints dots.
        let dots = if small { "..." } else { "" };
        outputs.stdout(&format!("{dots}{}", show_exchange(&spec)?));
    }
    let mut beat = |done: u64| {
        if let Some(h) = heartbeat.as_mut() {
            eprint!("{}", h.lines_up_to(done));
        }
    };
    // ab's own progress only: no webtune progress line redrawn among its lines.
    let (result, interrupted) = run_spec_watched(
        &spec,
        &webtune_engine::Workload::request(),
        "",
        true,
        &mut |p| beat(p.attempted),
    )?;
    beat(result.attempted());
    if small {
        outputs.stdout(".....done\n");
    } else {
        eprintln!("Finished {} requests", result.attempted());
    }
    if let Some(dest) = &args.csv {
        outputs.file("-e", dest, &ab_percentile_csv(&result));
    }
    if let Some(dest) = &args.gnuplot {
        outputs.file("-g", dest, &ab_gnuplot(&result));
    }
    if let Some(dest) = &args.json {
        outputs.file("--json", dest, &(result.to_json_pretty() + "\n"));
    }
    if let Some(dest) = &args.html {
        outputs.file("--html", dest, &webtune_report::html::render_html(&result));
    }
    let layout = AbLayout {
        variable_length: args.variable_length,
        percentiles: !args.no_percentiles,
        confidence: !args.no_confidence,
    };
    let mut report = format!("\n\n{}", render_ab(&result, &layout));
    if interrupted {
        report.push_str("\nINTERRUPTED — partial result\n");
    }
    outputs.stdout(&report);
    if !outputs.ok() {
        return Ok(outputs.exit_code(exit::SUCCESS));
    }
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    // ab gives up with a non-zero status when it cannot talk to the server at all; scripts
    // rely on that. webtune still prints what it measured, then fails the same way.
    if result.responses == 0 && result.errors.total() > 0 {
        eprintln!(
            "webtune ab: no request got a response ({}); exit status 1, as ab fails",
            result.errors.summary()
        );
        return Ok(exit::NO_SUCCESS);
    }
    Ok(exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_base64_of_user_and_password() {
        use clap::Parser;
        let words = ["webtune", "ab", "-A", "user:pass", "http://127.0.0.1/"];
        let webtune_cli::Command::Ab(ab) = webtune_cli::Cli::parse_from(words).command else {
            panic!("not ab");
        };
        let spec = ab.to_spec().unwrap();
        assert!(spec
            .headers
            .contains(&("Authorization".into(), "Basic dXNlcjpwYXNz".into())));
    }
}
