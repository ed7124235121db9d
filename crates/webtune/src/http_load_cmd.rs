//! `webtune http_load`: a drop-in for http_load. Its single-dash options
//! (`-parallel N | -rate N`, `-fetches N | -seconds N`, `-timeout S`, `-jitter`), a URL file,
//! and its output layout (see `webtune_report::http_load`) with webtune's percentiles
//! beneath. Like http_load, every fetch opens a new connection.

use crate::bench_cmd::{available_cores, run_spec_quiet, write_output, EXIT_INTERRUPTED};
use anyhow::{bail, Context};
use webtune_model::{RunSpec, StopCondition};

#[derive(clap::Args, Debug)]
#[command(after_help = "Usage (http_load's own):\n  \
    webtune http_load [-parallel N | -rate N] [-fetches N | -seconds N] [-timeout SECS] [-jitter] URL_FILE\n\
    URL_FILE holds one URL a line; each fetch picks one at random, as http_load does.\n\
    webtune extras: -json FILE, -html FILE. Refused: -checksum -throttle -proxy -cipher -sip.\n\
    Example:\n  echo http://127.0.0.1:8080/empty.gif > urls.txt\n  \
    webtune http_load -parallel 100 -seconds 10 urls.txt")]
pub struct HttpLoadArgs {
    /// http_load's options and the URL file, as http_load takes them.
    #[arg(
        value_name = "OPTIONS… URL_FILE",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    pub raw: Vec<String>,
}

/// http_load's options, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpLoadOptions {
    pub parallel: Option<u32>,
    pub rate: Option<f64>,
    pub fetches: Option<u64>,
    pub seconds: Option<f64>,
    pub timeout_s: Option<f64>,
    pub jitter: bool,
    pub url_file: String,
    pub json: Option<String>,
    pub html: Option<String>,
}

fn value<'a>(args: &'a [String], i: &mut usize, name: &str) -> anyhow::Result<&'a str> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .with_context(|| format!("-{name} needs a value"))
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> anyhow::Result<T> {
    text.parse()
        .ok()
        .with_context(|| format!("-{name} {text:?} is not a number"))
}

/// Parse http_load's command line (options start with one or two dashes).
pub fn parse_options(args: &[String]) -> anyhow::Result<HttpLoadOptions> {
    let mut o = HttpLoadOptions::default();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some(name) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            match name {
                "parallel" => o.parallel = Some(number(value(args, &mut i, name)?, name)?),
                "rate" => o.rate = Some(number(value(args, &mut i, name)?, name)?),
                "fetches" => o.fetches = Some(number(value(args, &mut i, name)?, name)?),
                "seconds" => o.seconds = Some(number(value(args, &mut i, name)?, name)?),
                "timeout" => o.timeout_s = Some(number(value(args, &mut i, name)?, name)?),
                "jitter" => o.jitter = true,
                "verbose" => {}
                "json" => o.json = Some(value(args, &mut i, name)?.to_string()),
                "html" => o.html = Some(value(args, &mut i, name)?.to_string()),
                "checksum" | "throttle" | "proxy" | "cipher" | "sip" => {
                    bail!("http_load option -{name} is not supported by webtune http_load")
                }
                _ => bail!("unknown http_load option {arg:?} (see webtune http_load --help)"),
            }
        } else {
            files.push(arg.clone());
        }
        i += 1;
    }
    match (o.parallel, o.rate) {
        (Some(_), Some(_)) => bail!("give -parallel or -rate, not both"),
        (None, None) => bail!("give -parallel N or -rate N"),
        _ => {}
    }
    match (o.fetches, o.seconds) {
        (Some(_), Some(_)) => bail!("give -fetches or -seconds, not both"),
        (None, None) => bail!("give -fetches N or -seconds N"),
        _ => {}
    }
    o.url_file = match files.as_slice() {
        [one] => one.clone(),
        [] => bail!("give a URL file (one URL a line)"),
        more => bail!(
            "one URL file expected, got {}: {}",
            more.len(),
            more.join(" ")
        ),
    };
    Ok(o)
}

/// The URLs of a URL file: one a line, blank lines and #-comments skipped.
pub fn read_url_file(path: &str) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read URL file {path}"))?;
    let urls: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if urls.is_empty() {
        bail!("URL file {path} holds no URL (one URL a line)");
    }
    Ok(urls)
}

/// The run http_load would make.
pub fn to_spec(o: &HttpLoadOptions, urls: &[String]) -> anyhow::Result<RunSpec> {
    if o.rate.is_some() {
        bail!("-rate needs webtune's open-loop mode, which is not available yet; use -parallel N");
    }
    let url = match urls {
        [one] => one.clone(),
        _ => bail!(
            "the URL file has {} URLs; picking among several URLs at random needs engine support \
             that is not there yet: give a file with one URL",
            urls.len()
        ),
    };
    let parallel = o.parallel.unwrap_or(1);
    if parallel == 0 {
        bail!("-parallel must be at least 1");
    }
    let stop = match (o.fetches, o.seconds) {
        (Some(0), _) => bail!("-fetches must be at least 1"),
        (Some(n), _) => StopCondition::Requests { count: n },
        (None, Some(s)) if s.is_finite() && s > 0.0 => StopCondition::Duration { seconds: s },
        _ => bail!("-seconds needs a positive number"),
    };
    let timeout_s = o.timeout_s.unwrap_or(60.0);
    if !timeout_s.is_finite() || timeout_s <= 0.0 {
        bail!("-timeout needs a positive number of seconds");
    }
    Ok(RunSpec {
        url,
        connections: parallel,
        threads: available_cores().min(parallel).max(1),
        stop,
        // http_load opens a new connection for every fetch and speaks HTTP/1.0.
        keepalive: false,
        http10: true,
        timeout_ms: (timeout_s * 1000.0) as u64,
        ..RunSpec::default()
    })
}

pub fn run(args: HttpLoadArgs) -> anyhow::Result<i32> {
    let options = parse_options(&args.raw)?;
    if options.jitter && options.rate.is_none() {
        eprintln!("webtune http_load: -jitter varies -rate; with -parallel it changes nothing");
    }
    let urls = read_url_file(&options.url_file)?;
    let spec = to_spec(&options, &urls)?;
    let (result, interrupted) = run_spec_quiet(&spec, "", false)?;
    print!("{}", webtune_report::http_load::render_http_load(&result));
    if interrupted {
        println!("INTERRUPTED — partial result");
    }
    if let Some(dest) = &options.json {
        write_output(dest, &(result.to_json_pretty() + "\n"))?;
    }
    if let Some(dest) = &options.html {
        write_output(dest, &webtune_report::html::render_html(&result))?;
    }
    Ok(if interrupted { EXIT_INTERRUPTED } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_http_loads_options() {
        let o = parse_options(&args("-parallel 100 -seconds 10 -timeout 5 urls.txt")).unwrap();
        assert_eq!(o.parallel, Some(100));
        assert_eq!(o.seconds, Some(10.0));
        assert_eq!(o.timeout_s, Some(5.0));
        assert_eq!(o.url_file, "urls.txt");
        let spec = to_spec(&o, &["http://127.0.0.1/".into()]).unwrap();
        assert_eq!(spec.connections, 100);
        assert!(!spec.keepalive);
        assert_eq!(spec.stop, StopCondition::Duration { seconds: 10.0 });
    }

    #[test]
    fn refuses_what_it_cannot_do_with_one_line() {
        let e = |t: &str| parse_options(&args(t)).unwrap_err().to_string();
        assert!(e("-parallel 1 -rate 5 -fetches 1 u").contains("not both"));
        assert!(e("-parallel 1 u").contains("-fetches N or -seconds N"));
        assert!(e("-parallel 1 -fetches 5 -throttle u").contains("-throttle is not supported"));
        assert!(e("-parallel x -fetches 5 u").contains("not a number"));
        let o = parse_options(&args("-rate 10 -fetches 5 u")).unwrap();
        let err = to_spec(&o, &["http://h/".into()]).unwrap_err().to_string();
        assert!(err.contains("open-loop"), "{err}");
    }
}
