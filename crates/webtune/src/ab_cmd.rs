//! `webtune ab`: a drop-in for ApacheBench. ab's flags (clap) mapped to ab's meaning
//! (`webtune_model::dropin::ab`: the run, the refused options, `-v 2`'s words), ab's output
//! layout (`webtune_report::ab`), `-e` and `-g` files as ab writes them.

use crate::exit;
use crate::flags::bench::available_cores;
use crate::output::{self, Outputs};
use crate::running::run_spec_watched;
use std::path::PathBuf;
use webtune_model::dropin::ab::{self, AbOptions};
use webtune_model::RunSpec;
use webtune_report::ab::{
    ab_gnuplot, ab_percentile_csv, render_ab, split_url, AbHeartbeat, AbLayout,
};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "ab's options, ab's meaning; the report is printed in ab's layout.\n\
    Differences: percentiles are µs-exact underneath (ab's table rounds to ms, as here);\n\
    -t runs for the time limit (ab also stops at 50000 requests).\n\
    Not supported (refused): -b -B -P -X -w -x -y -z -I -Z -f -E.\n\
    Examples:\n  webtune ab -n 1000 -c 10 http://127.0.0.1:8080/\n  \
    webtune ab -k -t 10 -c 100 -e pct.csv http://127.0.0.1:8080/empty.gif"
)]
pub struct AbArgs {
    /// [http://]hostname[:port]/path
    #[arg(required_unless_present = "version")]
    pub url: Option<String>,
    /// Number of requests to perform (ab's default: 1).
    #[arg(short = 'n', value_name = "requests")]
    pub requests: Option<u64>,
    /// Number of multiple requests to make at a time.
    #[arg(short = 'c', value_name = "concurrency", default_value_t = 1)]
    pub concurrency: u32,
    /// Seconds to max. to spend on benchmarking.
    #[arg(short = 't', value_name = "timelimit")]
    pub timelimit: Option<f64>,
    /// Seconds to max. wait for each response.
    #[arg(short = 's', value_name = "timeout", default_value_t = 30.0)]
    pub timeout: f64,
    /// Use HTTP KeepAlive feature.
    #[arg(short = 'k')]
    pub keepalive: bool,
    /// Add arbitrary header line, eg. 'Accept-Encoding: gzip' (repeatable).
    #[arg(short = 'H', value_name = "attribute")]
    pub headers: Vec<String>,
    /// Add cookie, eg. 'Apache=1234' (repeatable).
    #[arg(short = 'C', value_name = "attribute")]
    pub cookies: Vec<String>,
    /// Add Basic WWW Authentication, user:password.
    #[arg(short = 'A', value_name = "attribute")]
    pub auth: Option<String>,
    /// File containing data to POST. Remember also to set -T.
    #[arg(short = 'p', value_name = "postfile", conflicts_with = "putfile")]
    pub postfile: Option<PathBuf>,
    /// File containing data to PUT. Remember also to set -T.
    #[arg(short = 'u', value_name = "putfile")]
    pub putfile: Option<PathBuf>,
    /// Content-type header to use for POST/PUT data.
    #[arg(short = 'T', value_name = "content-type", default_value = "text/plain")]
    pub content_type: String,
    /// Method name.
    #[arg(short = 'm', value_name = "method")]
    pub method: Option<String>,
    /// Use HEAD instead of GET.
    #[arg(short = 'i')]
    pub head: bool,
    /// Accept variable document length (use this for dynamic pages).
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// Do not show progress.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Output CSV file with percentages served.
    #[arg(short = 'e', value_name = "filename")]
    pub csv: Option<String>,
    /// Output collected data to gnuplot format file.
    #[arg(short = 'g', value_name = "filename")]
    pub gnuplot: Option<String>,
    /// Don't exit on socket receive errors (webtune never does: accepted for compatibility).
    #[arg(short = 'r')]
    pub keep_going: bool,
    /// How much troubleshooting info to print (2 or more: the request head webtune sends and
    /// the response head of one exchange made before the run, in ab's words).
    #[arg(short = 'v', value_name = "verbosity", default_value_t = 0)]
    pub verbosity: u32,
    /// Do not show percentiles served table.
    #[arg(short = 'd')]
    pub no_percentiles: bool,
    /// Do not show confidence estimators (mean ± sd, median).
    #[arg(short = 'S')]
    pub no_confidence: bool,
    /// Print version number and exit.
    #[arg(short = 'V')]
    pub version: bool,
    /// webtune: also write the full result as JSON (webtune.run/1).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// webtune: also write the HTML report.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,

    // ab options webtune refuses; caught here so the error names them (Box<str> keeps
    // the struct small).
    #[arg(short = 'b', hide = true)]
    pub unsupported_b: Option<Box<str>>,
    #[arg(short = 'B', hide = true)]
    pub unsupported_bind: Option<Box<str>>,
    #[arg(short = 'P', hide = true)]
    pub unsupported_proxy_auth: Option<Box<str>>,
    #[arg(short = 'X', hide = true)]
    pub unsupported_proxy: Option<Box<str>>,
    #[arg(short = 'w', hide = true)]
    pub unsupported_html_tables: bool,
    #[arg(short = 'x', hide = true)]
    pub unsupported_table_attr: Option<Box<str>>,
    #[arg(short = 'y', hide = true)]
    pub unsupported_tr_attr: Option<Box<str>>,
    #[arg(short = 'z', hide = true)]
    pub unsupported_td_attr: Option<Box<str>>,
    #[arg(short = 'I', hide = true)]
    pub unsupported_sni: bool,
    #[arg(short = 'Z', hide = true)]
    pub unsupported_cipher: Option<Box<str>>,
    #[arg(short = 'f', hide = true)]
    pub unsupported_tls_protocol: Option<Box<str>>,
    #[arg(short = 'E', hide = true)]
    pub unsupported_client_cert: Option<Box<str>>,
}

impl AbArgs {
    /// The ab options webtune refuses, given or not, in `ab::UNSUPPORTED`'s order.
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

    /// ab's options that shape the run, as given.
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

    /// The run ab would make with these options (`webtune_model::dropin::ab`).
    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
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
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            ab: AbArgs,
        }
        let cli = Cli::parse_from(["ab", "-A", "user:pass", "http://127.0.0.1/"]);
        let spec = cli.ab.to_spec().unwrap();
        assert!(spec
            .headers
            .contains(&("Authorization".into(), "Basic dXNlcjpwYXNz".into())));
    }
}
