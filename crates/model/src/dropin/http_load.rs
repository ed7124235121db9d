//! http_load's command line with http_load's meaning (`webtune http_load`): its
//! single-dash options, shortened as http_load allows (`-p 10 -s 1`), the URL file, and the
//! run they ask for (`to_spec`); several URLs become one server's equal URL mix
//! (`url_mix`, for the engine's `Workload::url_mix`). Like http_load, every fetch opens a
//! new connection. The report's layout is `webtune_report::http_load`'s.

use super::{unchecked_tls, OptionError};
use crate::{Arrival, LoadMode, RunSpec, StopCondition};

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

fn value<'a>(args: &'a [String], i: &mut usize, name: &str) -> Result<&'a str, OptionError> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .ok_or_else(|| OptionError(format!("-{name} needs a value")))
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, OptionError> {
    text.parse()
        .map_err(|_| OptionError(format!("-{name} {text:?} is not a number")))
}

/// http_load's options in the order its parser tries them, then webtune's extras. http_load
/// takes any prefix of a name (`strncmp(arg, "-parallel", strlen(arg))`) and the first name
/// in this order that matches wins: `-p` is -parallel (not -proxy), `-s` -seconds (not -sip),
/// `-j` -jitter (http_load_12mar2006's main()).
const OPTION_ORDER: [&str; 15] = [
    "checksum", "throttle", "Throttle", "verbose", "timeout", "jitter", "parallel", "rate",
    "fetches", "seconds", "sip", "cipher", "proxy", "json", "html",
];

/// Options webtune http_load refuses (http_load has them; webtune does not do them).
const UNSUPPORTED: [&str; 6] = ["checksum", "throttle", "Throttle", "proxy", "cipher", "sip"];

/// The option a (prefix) name stands for, as http_load resolves it. Where http_load's pick
/// is one webtune refuses while the prefix also names one it runs (`-t`: -throttle or
/// -timeout), the prefix is refused as ambiguous, naming the candidates: a user who typed
/// `-t 5` meant a timeout far more often than http_load's throttle.
fn resolve(name: &str, arg: &str) -> Result<&'static str, OptionError> {
    let candidates: Vec<&'static str> = OPTION_ORDER
        .iter()
        .copied()
        .filter(|full| !name.is_empty() && full.starts_with(name))
        .collect();
    match candidates.as_slice() {
        [] => bail!("unknown http_load option {arg:?} (see webtune http_load --help)"),
        [first, ..]
            if UNSUPPORTED.contains(first)
                && candidates.iter().any(|c| !UNSUPPORTED.contains(c)) =>
        {
            let names: Vec<String> = candidates.iter().map(|c| format!("-{c}")).collect();
            bail!(
                "http_load option {arg} is ambiguous: it matches {} (http_load takes the first, \
                 which webtune does not support); spell out the one you mean",
                names.join(", ")
            )
        }
        [first, ..] => Ok(first),
    }
}

/// Parse http_load's command line (options start with one or two dashes, and may be
/// shortened to any prefix, as http_load allows: `-p 10 -s 1`).
pub fn parse_options(args: &[String]) -> Result<HttpLoadOptions, OptionError> {
    let mut o = HttpLoadOptions::default();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some(given) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            let name = resolve(given, arg)?;
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
                _ => bail!("http_load option -{name} is not supported by webtune http_load"),
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
    // As http_load's usage(): -jitter varies -rate's intervals, and is refused without it.
    if o.jitter && o.rate.is_none() {
        bail!("-jitter goes with -rate only (it varies the intervals between fetches); http_load refuses it with -parallel too")
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

/// The URLs of a URL file's `text` (read from `path`): one a line, blank lines and
/// #-comments skipped.
pub fn url_list(text: &str, path: &str) -> Result<Vec<String>, OptionError> {
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

/// The scheme://host:port part of a URL, and its path (with query), for grouping a URL file
/// by server.
fn split_origin(url: &str) -> Result<(String, String), OptionError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| OptionError(format!("{url:?} is not a URL (http://host/path)")))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    Ok((
        format!("{}://{authority}", scheme.to_ascii_lowercase()),
        path,
    ))
}

/// A scenario request name for the i-th URL (scenario names allow letters, digits, '_', '-'
/// and '.', at most 64): "url1", then the path with other characters as '_'.
fn request_name(i: usize, path: &str) -> String {
    let mut name = format!("url{}", i + 1);
    let cleaned: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('_');
    if !cleaned.is_empty() {
        name.push('_');
        name.extend(cleaned.chars().take(64 - name.len() - 1));
    }
    name
}

/// The URL file as one server's origin and its requests, each `(name, path)`: the
/// workload picks one at random, each equally often, as http_load does
/// (`Workload::url_mix`). Every URL must be on the same server (one host and port).
pub fn url_mix(urls: &[String]) -> Result<(String, Vec<(String, String)>), OptionError> {
    let mut origin = None;
    let mut requests = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        let (o, path) = split_origin(url)?;
        match &origin {
            None => origin = Some(o),
            Some(first) if *first != o => bail!(
                "the URL file mixes servers ({first} and {o}); webtune http_load loads one server \
                 at a time: split the file by host and port"
            ),
            Some(_) => {}
        }
        requests.push((request_name(i, &path), path));
    }
    let Some(origin) = origin else {
        bail!("the URL file holds no URL");
    };
    Ok((origin, requests))
}

/// The run http_load would make, on `cores` threads at most. With several URLs, the
/// workload is a URL-mix scenario (`url_mix`) and the spec's URL is their origin.
pub fn to_spec(o: &HttpLoadOptions, urls: &[String], cores: u32) -> Result<RunSpec, OptionError> {
    let url = match urls {
        [one] => one.clone(),
        [first, ..] => split_origin(first)?.0,
        [] => bail!("the URL file holds no URL"),
    };
    let (connections, load) = match (o.parallel, o.rate) {
        (Some(0), _) => bail!("-parallel must be at least 1"),
        (Some(p), _) => (p, LoadMode::Closed),
        (None, Some(rate)) if rate.is_finite() && rate > 0.0 => (
            // http_load -rate opens connections as fetches fall due; cap them as bench does.
            crate::spec::OPEN_LOOP_CONNECTIONS,
            LoadMode::Open {
                rate,
                // http_load's -jitter varies each interval by about ±10%; webtune's nearest
                // honest equivalent is Poisson arrivals.
                arrival: if o.jitter {
                    Arrival::Poisson
                } else {
                    Arrival::Uniform
                },
            },
        ),
        _ => bail!("-rate needs a positive number of fetches per second"),
    };
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
        connections,
        threads: cores.min(connections).max(1),
        stop,
        load,
        // http_load opens a new connection for every fetch and speaks HTTP/1.0.
        keepalive: false,
        http10: true,
        timeout_ms: (timeout_s * 1000.0) as u64,
        tls: unchecked_tls(),
        ..RunSpec::default()
    })
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
        let spec = to_spec(&o, &["http://127.0.0.1/".into()], 4).unwrap();
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
        let o = parse_options(&args("-rate 0 -fetches 5 u")).unwrap();
        let err = to_spec(&o, &["http://h/".into()], 4)
            .unwrap_err()
            .to_string();
        assert!(err.contains("-rate needs a positive"), "{err}");
        let mixed = url_mix(&["http://a/x".into(), "http://b/y".into()]);
        assert!(mixed.unwrap_err().to_string().contains("mixes servers"));
    }

    #[test]
    fn rate_is_open_loop_and_jitter_poisson() {
        let o = parse_options(&args("-rate 50 -jitter -seconds 2 u")).unwrap();
        let spec = to_spec(&o, &["http://h/".into()], 4).unwrap();
        assert_eq!(
            spec.load,
            LoadMode::Open {
                rate: 50.0,
                arrival: Arrival::Poisson
            }
        );
    }

    #[test]
    fn several_urls_become_an_equal_mix_on_one_server() {
        let urls = vec![
            "http://127.0.0.1:8080/a?x=\"1\"".to_string(),
            "http://127.0.0.1:8080/{b}".to_string(),
            "http://127.0.0.1:8080".to_string(),
        ];
        let (origin, requests) = url_mix(&urls).unwrap();
        assert_eq!(origin, "http://127.0.0.1:8080");
        let names: Vec<&str> = requests.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["url1_a_x__1", "url2_b", "url3"]);
        assert_eq!(request_name(0, &"/x".repeat(100)).len(), 63);
        let list = url_list("# mine\n\nhttp://h/a\n  http://h/b  \n", "u").unwrap();
        assert_eq!(list, ["http://h/a", "http://h/b"]);
        let none = url_list("# none\n", "urls.txt").unwrap_err().to_string();
        assert_eq!(none, "URL file urls.txt holds no URL (one URL a line)");
    }
}
