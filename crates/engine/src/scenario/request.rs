//! One `[[request]]` table (or a journey step's request keys) as written, checked into a
//! `RequestDef`: name, method, path, headers, body or body_file, expect_status and
//! body_contains, each problem a `Problem` naming the key and the fix.

use super::csv_file::CsvCache;
use super::error::{problem, Problem};
use super::template::{parse_template_in, Place, Scope, Template};
use super::RequestDef;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the docs live; named in messages that point the user to every key.
pub(super) const DOCS: &str = "docs/scenarios.md";

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

/// One `[[request]]` table as written; checked and turned into a `RequestDef`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequest {
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

impl RawRequest {
    /// A plain GET of `path` (a template) with weight 1 and every other key left out.
    pub(super) fn get(name: String, path: String) -> RawRequest {
        RawRequest {
            name,
            weight: 1,
            method: None,
            path,
            headers: BTreeMap::new(),
            body: None,
            body_file: None,
            expect_status: None,
            body_contains: None,
        }
    }
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
pub(super) fn key_with_wrong_type(table: &toml::Table) -> Option<&str> {
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

pub(super) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub(super) fn check_request(
    raw: RawRequest,
    base_dir: &Path,
    cache: &mut CsvCache,
) -> Result<RequestDef, Problem> {
    check_request_in(raw, base_dir, cache, None)
}

/// `check_request` for a journey's step: its templates may use `scope`'s values and users.
pub(super) fn check_request_in(
    raw: RawRequest,
    base_dir: &Path,
    cache: &mut CsvCache,
    scope: Option<&Scope>,
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
    let path = parse_template_in(&path_text, base_dir, Place::Path, cache, scope)
        .map_err(|p| field("path", p))?;
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
        let value = parse_template_in(&value, base_dir, Place::Header, cache, scope)
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
        (Some(text), None) => parse_template_in(&text, base_dir, Place::Body, cache, scope)
            .map_err(|p| field("body", p))?,
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
