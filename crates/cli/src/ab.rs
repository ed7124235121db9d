//! `webtune ab`'s flags: ApacheBench's command line.

use std::path::PathBuf;

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
