//! Reading and validating a scenario file: the TOML, key by key, into a `Scenario` (base
//! URL, think time, the requests with their templates, status lists and body checks), with
//! one-line messages that name the key and the fix.

use super::csv_file::CsvCache;
use super::error::{one_line, problem, Problem, ScenarioError};
use super::journey_parse::parse_journeys;
use super::request::{check_request, key_with_wrong_type, RawRequest, DOCS};
use super::think::Think;
use super::{RequestDef, Scenario};
use std::path::Path;

/// Read and validate a scenario file; CSV and body files are relative to its folder.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
        file: file.clone(),
        reason: e.to_string(),
    })?;
    let base_dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    parse_str(&text, base_dir, &file)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Parse and validate scenario text; `origin` names the file in messages and `base_dir` is
/// where CSV and body files are looked up.
pub fn parse_str(text: &str, base_dir: &Path, origin: &str) -> Result<Scenario, ScenarioError> {
    let file_error = |problem: String, fix: &str| ScenarioError::Invalid {
        file: origin.to_string(),
        request: None,
        problem,
        fix: fix.to_string(),
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!("line {}: ", line_of(text, s.start)))
            .unwrap_or_default();
        file_error(
            format!("{at}invalid TOML: {}", one_line(e.message())),
            "fix the syntax (strings need double quotes; each request starts with [[request]])",
        )
    })?;
    let mut base_url = None;
    let mut think = Think::None;
    let mut raw_requests = Vec::new();
    let mut raw_journeys = Vec::new();
    for (key, value) in table {
        match (key.as_str(), value) {
            ("base_url", toml::Value::String(url)) => {
                check_base_url(&url).map_err(|(p, f)| file_error(p, &f))?;
                base_url = Some(url);
            }
            ("think", toml::Value::String(t)) => {
                think = Think::parse(&t).map_err(|e| {
                    file_error(e, "")
                })?;
            }
            ("think", toml::Value::Integer(0)) => think = Think::None,
            ("request", toml::Value::Array(items)) => raw_requests = items,
            ("journey", toml::Value::Array(items)) => raw_journeys = items,
            ("journey", _) => {
                return Err(file_error(
                    "journey is not a list of tables".into(),
                    "start each journey with [[journey]] (two brackets)",
                ))
            }
            ("base_url" | "think", other) => {
                return Err(file_error(
                    format!("{key} must be a string, not {}", other.type_str()),
                    "quote the value",
                ))
            }
            ("request", _) => {
                return Err(file_error(
                    "request is not a list of tables".into(),
                    "start each request with [[request]] (two brackets)",
                ))
            }
            (other, _) => {
                return Err(file_error(
                    format!("unknown key {other:?} at the top level"),
                    "the top level takes base_url, think and [[request]] tables (or [[journey]] tables); request keys go after a [[request]] line",
                ))
            }
        }
    }
    if !raw_requests.is_empty() && !raw_journeys.is_empty() {
        return Err(file_error(
            "the file has both [[request]] and [[journey]] tables".into(),
            "keep one kind per file: a weighted mix of requests, or journeys (a request alone is a journey of one step)",
        ));
    }
    let mut cache = CsvCache::default();
    if !raw_journeys.is_empty() {
        let journeys = parse_journeys(raw_journeys, base_dir, origin, &mut cache)?;
        return Ok(Scenario {
            base_url,
            think,
            requests: Vec::new(),
            journeys,
        });
    }
    if raw_requests.is_empty() {
        return Err(file_error(
            "no requests".into(),
            "add at least one [[request]] table with a name and a path (or [[journey]] tables)",
        ));
    }
    let mut requests: Vec<RequestDef> = Vec::with_capacity(raw_requests.len());
    for (index, item) in raw_requests.into_iter().enumerate() {
        let label = item
            .get("name")
            .and_then(toml::Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("#{}", index + 1));
        let request_error = |p: Problem| ScenarioError::Invalid {
            file: origin.to_string(),
            request: Some(label.clone()),
            problem: p.problem,
            fix: p.fix,
        };
        let raw: RawRequest = match item {
            toml::Value::Table(t) => {
                let bad_key = key_with_wrong_type(&t).map(|k| format!("{k}: "));
                toml::Value::Table(t)
                    .try_into()
                    .map_err(|e: toml::de::Error| {
                        request_error(problem(
                            format!("{}{}", bad_key.unwrap_or_default(), one_line(e.message())),
                            format!("fix the key or its type (every key is listed in {DOCS})"),
                        ))
                    })?
            }
            _ => {
                return Err(request_error(problem(
                    "is not a table",
                    "write each request as a [[request]] table",
                )))
            }
        };
        let def = check_request(raw, base_dir, &mut cache).map_err(&request_error)?;
        if requests.iter().any(|r| r.name == def.name) {
            return Err(request_error(problem(
                "the name is used twice",
                "give every request its own name (results are broken down by name)",
            )));
        }
        requests.push(def);
    }
    if requests.iter().all(|r| r.weight == 0) {
        return Err(file_error(
            "every request has weight 0".into(),
            "give at least one request a weight above 0",
        ));
    }
    Ok(Scenario {
        base_url,
        think,
        requests,
        journeys: Vec::new(),
    })
}

/// A scenario built from values, not text: a GET of each `(name, path)` on `base_url`, all
/// equally weighted (http_load's URL file). Paths are taken literally (braces are not
/// placeholders); every request is checked by the rules a file's requests meet, and an
/// error names `origin`.
pub fn url_mix(
    base_url: &str,
    paths: &[(String, String)],
    origin: &str,
) -> Result<Scenario, ScenarioError> {
    let file_error = |problem: String, fix: String| ScenarioError::Invalid {
        file: origin.to_string(),
        request: None,
        problem,
        fix,
    };
    check_base_url(base_url).map_err(|(p, f)| file_error(p, f))?;
    if paths.is_empty() {
        return Err(file_error("no URLs".into(), "list at least one URL".into()));
    }
    let mut cache = CsvCache::default();
    let mut requests: Vec<RequestDef> = Vec::with_capacity(paths.len());
    for (name, path) in paths {
        let raw = RawRequest::get(name.clone(), path.replace('{', "{{").replace('}', "}}"));
        let def =
            check_request(raw, Path::new("."), &mut cache).map_err(|p| ScenarioError::Invalid {
                file: origin.to_string(),
                request: Some(name.clone()),
                problem: p.problem,
                fix: p.fix,
            })?;
        if requests.iter().any(|r| r.name == def.name) {
            return Err(file_error(
                format!("the name {:?} is used twice", def.name),
                "give every URL its own name".into(),
            ));
        }
        requests.push(def);
    }
    Ok(Scenario {
        base_url: Some(base_url.to_string()),
        think: Think::None,
        requests,
        journeys: Vec::new(),
    })
}

/// `base_url` must be an http:// URL with no path beyond "/" (request paths are absolute).
fn check_base_url(text: &str) -> Result<(), (String, String)> {
    let url = url::Url::parse(text).map_err(|e| {
        (
            format!("base_url {text:?} is not a URL ({e})"),
            "write e.g. base_url = \"http://127.0.0.1:8080\"".to_string(),
        )
    })?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err((
            format!("base_url {text:?} is not http:// or https://"),
            "write e.g. http://127.0.0.1:8080 or https://localhost:8443".into(),
        ));
    }
    if url.host().is_none() {
        return Err((
            format!("base_url {text:?} has no host"),
            "write e.g. http://127.0.0.1:8080".into(),
        ));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err((
            format!("base_url {text:?} has a path or query"),
            "give only scheme, host and port; put the path into each request's path".into(),
        ));
    }
    Ok(())
}
