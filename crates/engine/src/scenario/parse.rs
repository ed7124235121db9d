//! Reading and validating a scenario file: the TOML, key by key, into a `Scenario` (base
//! URL, think time, the requests with their templates, status lists and body checks), with
//! one-line messages that name the key and the fix.

use super::csv_file::CsvCache;
use super::error::{one_line, problem, Problem, ScenarioError};
use super::template::{parse_template, Place, Template};
use super::think::Think;
use super::{RequestDef, Scenario};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the docs live; named in messages that point the user to every key.
const DOCS: &str = "docs/scenarios.md";

/// The default `expect_status`, the same as the bench command's `--expect-status 2xx,3xx`.
const DEFAULT_EXPECT: [(u16, u16); 2] = [(200, 299), (300, 399)];

/// Parse status lists like the bench command's `--expect-status` (the one grammar,
/// `webtune_model::StatusRanges`): each entry "2xx", "200" or "200-299", or several
/// separated by commas.
pub fn parse_status_ranges(list: &[String]) -> Result<Vec<(u16, u16)>, String> {
    webtune_model::StatusRanges::parse_all(list.iter().map(String::as_str))
        .map(webtune_model::StatusRanges::into_pairs)
        .map_err(|e| e.to_string())
}

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

/// One `[[request]]` table as written; checked and turned into a `RequestDef`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: String,
    #[serde(default = "default_weight")]
    weight: u32,
    method: Option<String>,
    path: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    body_file: Option<String>,
    expect_status: Option<StatusList>,
    body_contains: Option<String>,
}

fn default_weight() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StatusList {
    One(String),
    Many(Vec<String>),
}

/// The first key of a request table whose value has the wrong type, so that serde's message
/// (which does not say which key) can be prefixed with it.
fn key_with_wrong_type(table: &toml::Table) -> Option<&str> {
    let strings = |v: &toml::Value| {
        v.as_array()
            .is_some_and(|a| a.iter().all(toml::Value::is_str))
    };
    table.iter().find_map(|(key, value)| {
        let fits = match key.as_str() {
            "name" | "method" | "path" | "body" | "body_file" | "body_contains" => value.is_str(),
            "weight" => value.as_integer().is_some_and(|w| u32::try_from(w).is_ok()),
            "headers" => value
                .as_table()
                .is_some_and(|t| t.values().all(toml::Value::is_str)),
            "expect_status" => value.is_str() || strings(value),
            _ => true,
        };
        (!fits).then_some(key.as_str())
    })
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
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
                    "the top level takes base_url, think and [[request]] tables; request keys go after a [[request]] line",
                ))
            }
        }
    }
    if raw_requests.is_empty() {
        return Err(file_error(
            "no requests".into(),
            "add at least one [[request]] table with a name and a path",
        ));
    }
    let mut cache = CsvCache::default();
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
        let raw = RawRequest {
            name: name.clone(),
            weight: 1,
            method: None,
            path: path.replace('{', "{{").replace('}', "}}"),
            headers: BTreeMap::new(),
            body: None,
            body_file: None,
            expect_status: None,
            body_contains: None,
        };
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

fn check_request(
    raw: RawRequest,
    base_dir: &Path,
    cache: &mut CsvCache,
) -> Result<RequestDef, Problem> {
    let name = raw.name;
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
    {
        return Err(problem(
            "the name must be 1-64 letters, digits, '_', '-' or '.'",
            "rename it, e.g. name = \"topic_list\"",
        ));
    }
    let method = raw.method.unwrap_or_else(|| "GET".to_string());
    if !is_token(&method) {
        return Err(problem(
            format!("method {method:?} is not a valid HTTP method"),
            "write e.g. method = \"POST\"",
        ));
    }
    let field = |what: &str, p: Problem| Problem {
        problem: format!("{what}: {}", p.problem),
        fix: p.fix,
    };
    let path_text = raw.path;
    if path_text.starts_with("http://") || path_text.starts_with("https://") {
        return Err(problem(
            format!("path {path_text:?} is a full URL"),
            "give only the path (e.g. \"/index.php\"); put http://host:port in base_url or on the command line",
        ));
    }
    if !path_text.starts_with('/') {
        return Err(problem(
            format!("path {path_text:?} does not start with '/'"),
            format!("write path = \"/{path_text}\""),
        ));
    }
    let path =
        parse_template(&path_text, base_dir, Place::Path, cache).map_err(|p| field("path", p))?;
    let mut headers = Vec::with_capacity(raw.headers.len());
    for (header, value) in raw.headers {
        if !is_token(&header) {
            return Err(problem(
                format!("header name {header:?} is not a token"),
                "use letters, digits and '-', e.g. \"X-Forum\"",
            ));
        }
        if header.eq_ignore_ascii_case("content-length")
            || header.eq_ignore_ascii_case("transfer-encoding")
        {
            return Err(problem(
                format!("header {header:?} cannot be set"),
                "remove it; webtune sets Content-Length from the body",
            ));
        }
        let value = parse_template(&value, base_dir, Place::Header, cache)
            .map_err(|p| field(&format!("header {header}"), p))?;
        headers.push((header, value));
    }
    let body = match (raw.body, raw.body_file) {
        (Some(_), Some(_)) => {
            return Err(problem(
                "both body and body_file are set",
                "keep one of them",
            ))
        }
        (Some(text), None) => {
            parse_template(&text, base_dir, Place::Body, cache).map_err(|p| field("body", p))?
        }
        (None, Some(file)) => {
            let path = base_dir.join(&file);
            let bytes = std::fs::read(&path).map_err(|e| {
                problem(
                    format!("cannot read body_file {}: {e}", path.display()),
                    "body_file is relative to the scenario file; check the name",
                )
            })?;
            if bytes.is_empty() {
                return Err(problem(
                    format!("body_file {} is empty", path.display()),
                    "fill it, or remove body_file to send no body",
                ));
            }
            Template::literal(bytes)
        }
        (None, None) => Template::default(),
    };
    let expect_status = match raw.expect_status {
        None => DEFAULT_EXPECT.to_vec(),
        Some(list) => {
            let list = match list {
                StatusList::One(s) => vec![s],
                StatusList::Many(v) => v,
            };
            parse_status_ranges(&list).map_err(|e| {
                problem(
                    format!("expect_status: {e}"),
                    "write e.g. expect_status = [\"2xx\", \"304\"]",
                )
            })?
        }
    };
    let body_contains = match raw.body_contains {
        Some(s) if s.is_empty() => {
            return Err(problem(
                "body_contains is empty",
                "give the text the body must contain, or remove the key",
            ))
        }
        Some(s) => Some(s.into_bytes()),
        None => None,
    };
    Ok(RequestDef {
        name,
        weight: raw.weight,
        method,
        path,
        headers,
        body,
        expect_status,
        body_contains,
    })
}
