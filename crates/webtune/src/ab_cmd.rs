//! `webtune ab`: a drop-in for ApacheBench. ab's options with ab's meaning, ab's output
//! layout (see `webtune_report::ab`), `-e` and `-g` files as ab writes them. ab options that
//! webtune does not support are refused with a one-line error naming them.

use crate::exit;
use crate::flags::bench::available_cores;
use crate::output::{self, Outputs};
use crate::running::run_spec_watched;
use anyhow::{bail, Context};
use base64::Engine as _;
use std::path::PathBuf;
use webtune_model::{RunSpec, StopCondition, TlsOptions};
use webtune_report::ab::{
    ab_gnuplot, ab_percentile_csv, render_ab, split_url, AbHeartbeat, AbLayout,
};

/// ab's default for -t without -n (its man page: "-t ... implies -n 50000").
const AB_TIMELIMIT_REQUESTS: u64 = 50_000;

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
    /// The first unsupported ab option given, with what it does in ab.
    fn unsupported_option(&self) -> Option<(&'static str, &'static str)> {
        let given = [
            (
                self.unsupported_b.is_some(),
                "-b",
                "TCP send/receive buffer size",
            ),
            (
                self.unsupported_bind.is_some(),
                "-B",
                "local address to bind to",
            ),
            (
                self.unsupported_proxy_auth.is_some(),
                "-P",
                "proxy authentication",
            ),
            (self.unsupported_proxy.is_some(), "-X", "proxy server"),
            (self.unsupported_html_tables, "-w", "results in HTML tables"),
            (
                self.unsupported_table_attr.is_some(),
                "-x",
                "HTML table attributes",
            ),
            (
                self.unsupported_tr_attr.is_some(),
                "-y",
                "HTML tr attributes",
            ),
            (
                self.unsupported_td_attr.is_some(),
                "-z",
                "HTML td attributes",
            ),
            (
                self.unsupported_sni,
                "-I",
                "turning TLS SNI off (webtune always sends it for a host name)",
            ),
            (
                self.unsupported_cipher.is_some(),
                "-Z",
                "TLS cipher suite (webtune offers rustls's TLS 1.2 and 1.3 suites)",
            ),
            (
                self.unsupported_tls_protocol.is_some(),
                "-f",
                "TLS protocol (webtune offers TLS 1.2 and 1.3)",
            ),
            (
                self.unsupported_client_cert.is_some(),
                "-E",
                "TLS client certificate",
            ),
        ];
        given
            .into_iter()
            .find(|(set, _, _)| *set)
            .map(|(_, flag, what)| (flag, what))
    }

    /// ab accepts "hostname:port/path" without a scheme.
    fn full_url(&self) -> anyhow::Result<String> {
        let Some(url) = &self.url else {
            bail!("give a URL: [http://]hostname[:port]/path");
        };
        Ok(if url.contains("://") {
            url.clone()
        } else {
            format!("http://{url}")
        })
    }

    /// The run ab would make with these options.
    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
        if self.concurrency == 0 {
            bail!("-c must be at least 1");
        }
        let body_file = self.postfile.as_ref().or(self.putfile.as_ref());
        let body = match body_file {
            Some(path) => {
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?
            }
            None => Vec::new(),
        };
        let method = match (&self.method, self.head, &self.postfile, &self.putfile) {
            (Some(m), _, _, _) => m.clone(),
            (None, true, _, _) => "HEAD".into(),
            (None, false, Some(_), _) => "POST".into(),
            (None, false, None, Some(_)) => "PUT".into(),
            _ => "GET".into(),
        };
        let mut headers = Vec::new();
        for h in &self.headers {
            let (name, value) = h
                .split_once(':')
                .with_context(|| format!("-H {h:?} has no ':' (use -H 'Name: value')"))?;
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        if !self.cookies.is_empty() {
            headers.push(("Cookie".into(), self.cookies.join("; ")));
        }
        if let Some(auth) = &self.auth {
            headers.push((
                "Authorization".into(),
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(auth.as_bytes())
                ),
            ));
        }
        if body_file.is_some() {
            headers.push(("Content-Type".into(), self.content_type.clone()));
        }
        if !self.timeout.is_finite() || self.timeout <= 0.0 {
            bail!("-s needs a positive number of seconds");
        }
        let stop = match (self.timelimit, self.requests) {
            (Some(t), _) if t.is_finite() && t > 0.0 => StopCondition::Duration { seconds: t },
            (Some(_), _) => bail!("-t needs a positive number of seconds"),
            (None, Some(0)) => bail!("-n must be at least 1"),
            (None, Some(n)) => StopCondition::Requests { count: n },
            (None, None) => StopCondition::Requests { count: 1 },
        };
        if let StopCondition::Requests { count } = stop {
            if count < self.concurrency as u64 {
                bail!("Cannot use concurrency level greater than total number of requests (ab's rule: -c {} > -n {count})", self.concurrency);
            }
        }
        Ok(RunSpec {
            url: self.full_url()?,
            method,
            headers,
            body_bytes: body.len() as u64,
            body,
            connections: self.concurrency,
            threads: available_cores().min(self.concurrency).max(1),
            stop,
            keepalive: self.keepalive,
            // ab speaks HTTP/1.0, with "Connection: Keep-Alive" under -k.
            http10: true,
            timeout_ms: (self.timeout * 1000.0) as u64,
            // ab never checks the server's certificate.
            tls: TlsOptions {
                insecure: true,
                ..TlsOptions::default()
            },
            ..RunSpec::default()
        })
    }
}

/// `-v 2`: the request head and the response head, in ab's words ("INFO: GET header ==",
/// "LOG: header received:"). ab prints the head of every response; webtune shows one
/// exchange, made before the run on a connection of its own and not counted in the result.
fn show_exchange(spec: &RunSpec) -> anyhow::Result<String> {
    let shown = webtune_engine::show::exchange_once(spec)?;
    let request = String::from_utf8_lossy(&shown.request);
    let head = request.split_once("\r\n\r\n").map_or(&*request, |(h, _)| h);
    let mut out = format!(
        "INFO: {} header == \n---\n{head}\r\n\r\n\n---\n",
        spec.method
    );
    match shown.response_head {
        Ok(bytes) => {
            out.push_str(&format!(
                "LOG: header received:\n{}\n",
                String::from_utf8_lossy(&bytes)
            ));
        }
        Err(why) => out.push_str(&format!("LOG: no response: {why}\n")),
    }
    Ok(out)
}

pub fn run(args: AbArgs) -> anyhow::Result<i32> {
    let version = env!("CARGO_PKG_VERSION");
    if args.version {
        return Ok(output::print_only(&format!(
            "This is webtune {version}, ab-compatible front end (ApacheBench 2.3 layout)\n"
        )));
    }
    if let Some((flag, what)) = args.unsupported_option() {
        bail!("ab option {flag} ({what}) is not supported by webtune ab");
    }
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
    if args.timelimit.is_some() && args.requests.is_some() {
        eprintln!(
            "webtune ab: -t and -n together: running for -t seconds (ab would also stop at -n)"
        );
    } else if args.timelimit.is_some() {
        eprintln!(
            "webtune ab: -t runs for the whole time limit (ab also stops at {AB_TIMELIMIT_REQUESTS} requests)"
        );
    }
    if args.verbosity >= 2 {
        eprintln!(
            "webtune ab: -v 2 shows one exchange, made before the run and not counted in it \
             (ab shows the head of every response)"
        );
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
    let requests = match spec.stop {
        StopCondition::Requests { count } => count,
        _ => AB_TIMELIMIT_REQUESTS,
    };
    let mut heartbeat = AbHeartbeat::new(requests, args.quiet);
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
