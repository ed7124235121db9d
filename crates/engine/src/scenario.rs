//! Workload scenarios: a TOML file of named requests with weights, URL / header / body
//! templates, per-request status and body checks, and a think time per connection (seed 003's
//! JMeter plan: forum list 20 %, topic list 20 %, one thread 60 %).
//!
//! This module owns reading and validating a scenario (`load`, `parse_str`), the templates
//! (`Template`: `{rand:LO:HI}`, `{seq}`, `{csv:FILE:COLUMN}`, `{{` / `}}`), picking a request
//! by weight (`WeightedPicker`), sampling think times (`Think`) and encoding one request into
//! bytes (`encode_into`). Everything that can fail fails at load time with a one-line message
//! naming the file, the request and the fix; rendering and encoding cannot fail and do not
//! allocate once the output buffer has grown to the largest request. It opens no sockets and
//! keeps no statistics: the engine does that. The format is documented in docs/scenarios.md.

use crate::rng::Rng;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the docs live; named in messages that point the user to every key.
const DOCS: &str = "docs/scenarios.md";
/// The longest think time accepted; longer is almost surely a unit mistake.
const MAX_THINK: Duration = Duration::from_secs(3600);
/// The default `expect_status`, the same as the bench command's `--expect-status 2xx,3xx`.
const DEFAULT_EXPECT: [(u16, u16); 2] = [(200, 299), (300, 399)];

/// A scenario that cannot be used: one line naming the file, the request and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {file}: {reason}; check the path and that the file is readable")]
    Read { file: String, reason: String },
    #[error("{file}: {}{problem}{}", request_label(.request), fix_suffix(.fix))]
    Invalid {
        file: String,
        /// The request's name (or "#N" when it has none); `None` for file-wide problems.
        request: Option<String>,
        problem: String,
        fix: String,
    },
}

fn request_label(request: &Option<String>) -> String {
    match request {
        Some(name) => format!("request {name:?}: "),
        None => String::new(),
    }
}

fn fix_suffix(fix: &str) -> String {
    if fix.is_empty() {
        String::new()
    } else {
        format!("; {fix}")
    }
}

/// Collapse a message onto one line (library messages sometimes span several).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A problem found while checking one value; the caller adds the file and request name.
#[derive(Debug)]
struct Problem {
    problem: String,
    fix: String,
}

fn problem(problem: impl Into<String>, fix: impl Into<String>) -> Problem {
    Problem {
        problem: problem.into(),
        fix: fix.into(),
    }
}

/// A whole, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `base_url` from the file; a URL on the command line overrides it.
    pub base_url: Option<String>,
    /// Pause per connection between a response and the next request (closed loop).
    pub think: Think,
    pub requests: Vec<RequestDef>,
}

impl Scenario {
    /// The requests' weights, in order.
    pub fn weights(&self) -> Vec<u32> {
        self.requests.iter().map(|r| r.weight).collect()
    }

    /// A picker over the requests' weights.
    pub fn picker(&self) -> WeightedPicker {
        WeightedPicker::new(&self.weights())
    }
}

/// Think time: how long a connection waits after a response before its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    None,
    Fixed(Duration),
    /// Uniform between the two bounds, inclusive of the lower.
    Uniform(Duration, Duration),
    /// Exponential with this mean (a Poisson user).
    Exponential(Duration),
}

impl Think {
    /// One think time.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo).mul_f64(rng.unit()),
            Think::Exponential(mean) => {
                Duration::try_from_secs_f64(rng.exp(mean.as_secs_f64())).unwrap_or(MAX_THINK)
            }
        }
    }

    /// The mean think time.
    pub fn mean(&self) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo) / 2,
        }
    }

    /// Parse "0", "none", "100ms", "uniform:50ms:150ms" or "exp:100ms".
    pub fn parse(text: &str) -> Result<Think, String> {
        const FORMS: &str = "use e.g. \"100ms\", \"uniform:50ms:150ms\" or \"exp:100ms\"";
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let think = if lower == "none" || lower.is_empty() {
            Think::None
        } else if let Some(rest) = lower.strip_prefix("uniform:") {
            let (lo, hi) = rest
                .split_once(':')
                .ok_or_else(|| format!("think {text:?} needs two bounds; {FORMS}"))?;
            let lo = parse_duration(lo).map_err(|e| format!("think {text:?}: {e}"))?;
            let hi = parse_duration(hi).map_err(|e| format!("think {text:?}: {e}"))?;
            if lo > hi {
                return Err(format!(
                    "think {text:?} has its lower bound above its upper; swap them"
                ));
            }
            Think::Uniform(lo, hi)
        } else if let Some(rest) = lower.strip_prefix("exp:") {
            Think::Exponential(parse_duration(rest).map_err(|e| format!("think {text:?}: {e}"))?)
        } else if lower.contains(':') {
            return Err(format!("think {text:?} is not a known form; {FORMS}"));
        } else {
            Think::Fixed(
                parse_duration(&lower).map_err(|e| format!("think {text:?}: {e}; {FORMS}"))?,
            )
        };
        if think.mean() > MAX_THINK {
            return Err(format!(
                "think {text:?} is longer than an hour; check the unit ({FORMS})"
            ));
        }
        Ok(match think {
            Think::Fixed(d) | Think::Exponential(d) if d.is_zero() => Think::None,
            Think::Uniform(lo, hi) if hi.is_zero() && lo.is_zero() => Think::None,
            other => other,
        })
    }
}

/// A think time: the workspace's one duration grammar (`webtune_model::parse_duration`),
/// except that a bare number other than "0" is refused here: in a scenario file "5" is more
/// likely meant as milliseconds than as seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text != "0" && !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("{text:?} has no unit; write e.g. {text}ms"));
    }
    webtune_model::parse_duration(text).map_err(|e| e.to_string())
}

/// One named request of the mix.
#[derive(Debug, Clone)]
pub struct RequestDef {
    pub name: String,
    pub weight: u32,
    pub method: String,
    /// Path and query, starting with '/'; relative to the base URL's host and port.
    pub path: Template,
    /// Header names are checked tokens; values are templates (never CR / LF / NUL).
    pub headers: Vec<(String, Template)>,
    /// The request body; empty when none.
    pub body: Template,
    /// Inclusive status ranges that count as success.
    pub expect_status: Vec<(u16, u16)>,
    /// When set, a response whose body lacks these bytes is a `body_check` error.
    pub body_contains: Option<Vec<u8>>,
}

impl RequestDef {
    /// True when every template is static, so the encoded request never changes.
    pub fn is_static(&self) -> bool {
        self.path.is_static()
            && self.body.is_static()
            && self.headers.iter().all(|(_, v)| v.is_static())
    }

    /// True when `status` is one of the expected ones.
    #[inline]
    pub fn status_ok(&self, status: u16) -> bool {
        self.expect_status
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// The column values of one CSV file, loaded once at parse time.
struct CsvTable {
    file: String,
    columns: Vec<String>,
    /// Row-major: `cells[row * columns.len() + column]`.
    cells: Vec<Box<[u8]>>,
    rows: usize,
    /// Mixed into the per-request row draw so that different files pick independent rows.
    id: u64,
}

impl fmt::Debug for CsvTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsvTable")
            .field("file", &self.file)
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .finish()
    }
}

impl CsvTable {
    /// The row for this request: the same draw gives the same row for every column.
    #[inline]
    fn row(&self, row_draw: u64) -> usize {
        let mut x = row_draw ^ self.id;
        // A splitmix64 finaliser (see rng.rs) so files with equal row counts differ.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        ((u128::from(x) * self.rows as u128) >> 64) as usize
    }

    #[inline]
    fn cell(&self, row: usize, column: usize) -> &[u8] {
        &self.cells[row * self.columns.len() + column]
    }
}

#[derive(Debug, Clone)]
enum Part {
    Literal(Box<[u8]>),
    Rand { lo: u64, hi: u64 },
    Seq,
    Csv { table: Arc<CsvTable>, column: usize },
}

/// Where a template is used decides which bytes it may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The request target: visible ASCII only (no space, no control, nothing above 0x7e).
    Path,
    /// A header value: no CR, LF, NUL or other control byte except tab.
    Header,
    /// The body: anything.
    Body,
}

impl Place {
    /// The first byte not allowed here, if any.
    fn bad_byte(self, bytes: &[u8]) -> Option<u8> {
        match self {
            Place::Path => bytes.iter().copied().find(|b| !(0x21..=0x7e).contains(b)),
            Place::Header => bytes
                .iter()
                .copied()
                .find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f),
            Place::Body => None,
        }
    }

    fn rule(self) -> &'static str {
        match self {
            Place::Path => "percent-encode it (e.g. %20 for a space)",
            Place::Header => "header values cannot hold CR, LF or other control characters",
            Place::Body => "",
        }
    }
}

/// Text with placeholders, parsed once, rendered per request without allocating.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
    source: String,
    has_csv: bool,
}

impl Default for Template {
    fn default() -> Template {
        Template::literal(Vec::new())
    }
}

/// CSV tables already loaded while parsing one scenario, by path.
#[derive(Default)]
struct CsvCache {
    tables: HashMap<PathBuf, Arc<CsvTable>>,
}

impl Template {
    /// A template without placeholders.
    fn literal(bytes: Vec<u8>) -> Template {
        let source = String::from_utf8_lossy(&bytes).into_owned();
        let parts = if bytes.is_empty() {
            Vec::new()
        } else {
            vec![Part::Literal(bytes.into_boxed_slice())]
        };
        Template {
            parts,
            source,
            has_csv: false,
        }
    }

    /// Parse a template with the header-value rules (no CR, LF or NUL in the text or in the
    /// CSV values it uses). `{csv:FILE:...}` files are relative to `base_dir`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Template, ScenarioError> {
        parse_template(text, base_dir, Place::Header, &mut CsvCache::default()).map_err(|p| {
            ScenarioError::Invalid {
                file: format!("template {text:?}"),
                request: None,
                problem: p.problem,
                fix: p.fix,
            }
        })
    }

    /// True when the template has no placeholders.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The text as written in the scenario.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The rendered length when static, else the length of its literal parts.
    pub fn literal_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(b) => b.len(),
                _ => 0,
            })
            .sum()
    }

    /// Append the rendered text to `out` (no allocation when `out` has capacity).
    #[inline]
    pub fn render_into(&self, rng: &mut Rng, seq: u64, out: &mut Vec<u8>) {
        let row_draw = if self.has_csv { rng.next_u64() } else { 0 };
        self.render_with(rng, seq, row_draw, out);
    }

    /// Render with a given CSV row draw, so that several templates of one request share rows.
    #[inline]
    fn render_with(&self, rng: &mut Rng, seq: u64, row_draw: u64, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::Rand { lo, hi } => push_decimal(out, rng.between(*lo, *hi)),
                Part::Seq => push_decimal(out, seq),
                Part::Csv { table, column } => {
                    out.extend_from_slice(table.cell(table.row(row_draw), *column))
                }
            }
        }
    }
}

/// Append `value` in decimal without allocating.
#[inline]
fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn describe_byte(b: u8) -> String {
    match b {
        b' ' => "a space".into(),
        b'\r' => "a CR".into(),
        b'\n' => "a line feed".into(),
        0x21..=0x7e => format!("{:?}", b as char),
        _ => format!("the byte 0x{b:02x}"),
    }
}

fn parse_template(
    text: &str,
    base_dir: &Path,
    place: Place,
    cache: &mut CsvCache,
) -> Result<Template, Problem> {
    let mut parts = Vec::new();
    let mut literal: Vec<u8> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['{', '}']) {
        literal.extend_from_slice(&rest.as_bytes()[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            literal.push(b'{');
            rest = after;
            continue;
        }
        if let Some(after) = tail.strip_prefix("}}") {
            literal.push(b'}');
            rest = after;
            continue;
        }
        if tail.starts_with('}') {
            return Err(problem(
                format!("unmatched '}}' in {text:?}"),
                "write '}}' for a literal '}'",
            ));
        }
        let close = tail.find('}').ok_or_else(|| {
            problem(
                format!("unclosed '{{' in {text:?}"),
                "close the placeholder with '}' or write '{{' for a literal '{'",
            )
        })?;
        let inner = &tail[1..close];
        if inner.contains('{') {
            return Err(problem(
                format!("'{{' inside the placeholder {{{inner}}} in {text:?}"),
                "placeholders do not nest; write '{{' for a literal '{'",
            ));
        }
        let part = parse_placeholder(inner, base_dir, place, cache)?;
        if !literal.is_empty() {
            parts.push(Part::Literal(
                std::mem::take(&mut literal).into_boxed_slice(),
            ));
        }
        parts.push(part);
        rest = &tail[close + 1..];
    }
    literal.extend_from_slice(rest.as_bytes());
    if !literal.is_empty() {
        parts.push(Part::Literal(literal.into_boxed_slice()));
    }
    for part in &parts {
        if let Part::Literal(bytes) = part {
            if let Some(b) = place.bad_byte(bytes) {
                return Err(problem(
                    format!("{text:?} contains {}", describe_byte(b)),
                    place.rule(),
                ));
            }
        }
    }
    let has_csv = parts.iter().any(|p| matches!(p, Part::Csv { .. }));
    Ok(Template {
        parts,
        source: text.to_string(),
        has_csv,
    })
}

const PLACEHOLDERS: &str =
    "use {rand:LO:HI}, {seq} or {csv:FILE:COLUMN}, or write {{ and }} for literal braces";

fn parse_placeholder(
    inner: &str,
    base_dir: &Path,
    place: Place,
    cache: &mut CsvCache,
) -> Result<Part, Problem> {
    let (kind, args) = inner.split_once(':').unwrap_or((inner, ""));
    match kind.trim() {
        "seq" if args.is_empty() => Ok(Part::Seq),
        "rand" => {
            let (lo, hi) = args.split_once(':').ok_or_else(|| {
                problem(
                    format!("{{{inner}}} needs two bounds"),
                    "write {rand:LO:HI}, e.g. {rand:1:150000}",
                )
            })?;
            let number = |s: &str| {
                s.trim().parse::<u64>().map_err(|_| {
                    problem(
                        format!("{{{inner}}}: {s:?} is not a whole number ≥ 0"),
                        "write {rand:LO:HI} with integers, e.g. {rand:1:150000}",
                    )
                })
            };
            let (lo, hi) = (number(lo)?, number(hi)?);
            if lo > hi {
                return Err(problem(
                    format!("{{{inner}}} has LO above HI"),
                    format!("write {{rand:{hi}:{lo}}}"),
                ));
            }
            Ok(Part::Rand { lo, hi })
        }
        "csv" => {
            let (file, column) = args.rsplit_once(':').ok_or_else(|| {
                problem(
                    format!("{{{inner}}} needs a file and a column"),
                    "write {csv:FILE:COLUMN}, e.g. {csv:users.csv:name}",
                )
            })?;
            if file.trim().is_empty() || column.trim().is_empty() {
                return Err(problem(
                    format!("{{{inner}}} needs a file and a column"),
                    "write {csv:FILE:COLUMN}, e.g. {csv:users.csv:name}",
                ));
            }
            let table = load_csv(&base_dir.join(file.trim()), cache)?;
            let column_name = column.trim();
            let column = table
                .columns
                .iter()
                .position(|c| c == column_name)
                .ok_or_else(|| {
                    problem(
                        format!(
                            "{} has no column {column_name:?} (its columns: {})",
                            table.file,
                            table.columns.join(", ")
                        ),
                        "use one of those names, or add the column to the file's header row",
                    )
                })?;
            for row in 0..table.rows {
                if let Some(b) = place.bad_byte(table.cell(row, column)) {
                    return Err(problem(
                        format!(
                            "{} column {column_name:?} data row {} contains {}, which cannot go {}",
                            table.file,
                            row + 1,
                            describe_byte(b),
                            if place == Place::Path {
                                "into a path"
                            } else {
                                "into a header"
                            }
                        ),
                        place.rule(),
                    ));
                }
            }
            Ok(Part::Csv { table, column })
        }
        _ => Err(problem(
            format!("unknown placeholder {{{inner}}}"),
            PLACEHOLDERS,
        )),
    }
}

fn load_csv(path: &Path, cache: &mut CsvCache) -> Result<Arc<CsvTable>, Problem> {
    if let Some(table) = cache.tables.get(path) {
        return Ok(Arc::clone(table));
    }
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        problem(
            format!("cannot read CSV file {file}: {e}"),
            "CSV paths are relative to the scenario file; check the name",
        )
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| problem(format!("CSV file {file} is not UTF-8"), "save it as UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let records =
        parse_csv(text).map_err(|e| problem(format!("CSV file {file}: {e}"), "fix the quoting"))?;
    let mut records = records.into_iter();
    let (_, header) = records.next().ok_or_else(|| {
        problem(
            format!("CSV file {file} is empty"),
            "it needs a header row naming the columns and at least one data row",
        )
    })?;
    let columns: Vec<String> = header
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c).trim().to_string())
        .collect();
    for (i, c) in columns.iter().enumerate() {
        if c.is_empty() || columns[..i].contains(c) {
            return Err(problem(
                format!(
                    "CSV file {file}: column {} of the header row is empty or repeated",
                    i + 1
                ),
                "give every column a distinct name in the first row",
            ));
        }
    }
    let mut cells = Vec::new();
    let mut rows = 0usize;
    for (line, record) in records {
        if record.len() != columns.len() {
            return Err(problem(
                format!(
                    "CSV file {file} line {line} has {} values but the header has {}",
                    record.len(),
                    columns.len()
                ),
                "give every row one value per column (quote values that contain commas)",
            ));
        }
        cells.extend(record.into_iter().map(Vec::into_boxed_slice));
        rows += 1;
    }
    if rows == 0 {
        return Err(problem(
            format!("CSV file {file} has a header row but no data rows"),
            "add at least one row of values",
        ));
    }
    // Any distinct value per file will do; spread the file's number like a seed.
    let id = Rng::seeded(cache.tables.len() as u64 + 1).next_u64();
    let table = Arc::new(CsvTable {
        file,
        columns,
        cells,
        rows,
        id,
    });
    cache.tables.insert(path.to_path_buf(), Arc::clone(&table));
    Ok(table)
}

/// One CSV record: the line it starts on and its fields.
type CsvRecord = (usize, Vec<Vec<u8>>);

/// Split CSV text (RFC 4180: ',' separates, '"' quotes, '""' is a quote inside quotes, CRLF
/// or LF ends a record) into records with the line each starts on. Blank lines are skipped.
fn parse_csv(text: &str) -> Result<Vec<CsvRecord>, String> {
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    let mut record: Vec<Vec<u8>> = Vec::new();
    let mut field: Vec<u8> = Vec::new();
    let mut line = 1usize;
    let mut record_line = 1usize;
    let mut i = 0usize;
    let mut quoted_field = false;
    let end_record = |record: &mut Vec<Vec<u8>>,
                      field: &mut Vec<u8>,
                      records: &mut Vec<CsvRecord>,
                      record_line: usize,
                      quoted: bool| {
        record.push(std::mem::take(field));
        let blank = record.len() == 1 && record[0].is_empty() && !quoted;
        if blank {
            record.clear();
        } else {
            records.push((record_line, std::mem::take(record)));
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        if field.is_empty() && b == b'"' && !quoted_field {
            // A quoted field: read to the closing quote.
            quoted_field = true;
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(format!("a quote opened on line {line} is never closed")),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                        field.push(b'"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        if c == b'\n' {
                            line += 1;
                        }
                        field.push(c);
                        i += 1;
                    }
                }
            }
            match bytes.get(i) {
                None | Some(b',') | Some(b'\n') | Some(b'\r') => {}
                Some(_) => {
                    return Err(format!("text after a closing quote on line {line}"));
                }
            }
            continue;
        }
        match b {
            b',' => {
                record.push(std::mem::take(&mut field));
                quoted_field = false;
            }
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {}
            b'\n' => {
                end_record(
                    &mut record,
                    &mut field,
                    &mut records,
                    record_line,
                    quoted_field,
                );
                quoted_field = false;
                line += 1;
                record_line = line;
            }
            _ => field.push(b),
        }
        i += 1;
    }
    if !field.is_empty() || !record.is_empty() || quoted_field {
        end_record(
            &mut record,
            &mut field,
            &mut records,
            record_line,
            quoted_field,
        );
    }
    Ok(records)
}

/// Parse status lists like the bench command's `--expect-status` (the one grammar,
/// `webtune_model::StatusRanges`): each entry "2xx", "200" or "200-299", or several
/// separated by commas.
pub fn parse_status_ranges(list: &[String]) -> Result<Vec<(u16, u16)>, String> {
    webtune_model::StatusRanges::parse_all(list.iter().map(String::as_str))
        .map(webtune_model::StatusRanges::into_pairs)
        .map_err(|e| e.to_string())
}

/// Picks request indices in proportion to their weights in O(log n) (a binary search over
/// the running sums).
#[derive(Debug, Clone)]
pub struct WeightedPicker {
    /// `cumulative[i]` = sum of weights 0..=i.
    cumulative: Vec<u64>,
}

impl WeightedPicker {
    /// Weights of zero are never picked; when all are zero every index is equally likely.
    pub fn new(weights: &[u32]) -> WeightedPicker {
        let all_zero = weights.iter().all(|&w| w == 0);
        let mut sum = 0u64;
        let cumulative = weights
            .iter()
            .map(|&w| {
                sum += if all_zero { 1 } else { u64::from(w) };
                sum
            })
            .collect();
        WeightedPicker { cumulative }
    }

    /// An index into the weights given to `new` (0 when that was empty).
    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> usize {
        match self.cumulative.last() {
            None => 0,
            Some(&total) => {
                let r = rng.below(total);
                self.cumulative.partition_point(|&c| c <= r)
            }
        }
    }
}

/// Builds the full HTTP/1.x request bytes for one request of the scenario into `out`
/// (cleared first): request line, Host (`host_header`), User-Agent webtune/VERSION, Accept
/// */*, `Connection: close` when not keep-alive (`keep-alive` for HTTP/1.0 with keep-alive),
/// Content-Length when there is a body, the request's own headers (a request's Host,
/// User-Agent, Accept or Connection replaces the default), an empty line, the body. All
/// `{csv:...}` placeholders of one file take the same row within one request.
pub fn encode_into(
    def: &RequestDef,
    host_header: &str,
    keepalive: bool,
    http10: bool,
    rng: &mut Rng,
    seq: u64,
    out: &mut Vec<u8>,
) {
    out.clear();
    let uses_csv =
        def.path.has_csv || def.body.has_csv || def.headers.iter().any(|(_, v)| v.has_csv);
    let row_draw = if uses_csv { rng.next_u64() } else { 0 };
    // A templated body is rendered first to learn its length, then rotated behind the head.
    let dynamic_body = !def.body.is_static();
    let body_len = if dynamic_body {
        def.body.render_with(rng, seq, row_draw, out);
        out.len()
    } else {
        def.body.literal_len()
    };
    out.extend_from_slice(def.method.as_bytes());
    out.push(b' ');
    def.path.render_with(rng, seq, row_draw, out);
    out.extend_from_slice(if http10 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    if !def.has_header("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host_header.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !def.has_header("user-agent") {
        out.extend_from_slice(
            concat!("User-Agent: webtune/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
        );
    }
    if !def.has_header("accept") {
        out.extend_from_slice(b"Accept: */*\r\n");
    }
    if !def.has_header("connection") {
        match (keepalive, http10) {
            (false, _) => out.extend_from_slice(b"Connection: close\r\n"),
            (true, true) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            (true, false) => {}
        }
    }
    if body_len > 0 {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, body_len as u64);
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &def.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        value.render_with(rng, seq, row_draw, out);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if dynamic_body {
        out.rotate_left(body_len);
    } else {
        def.body.render_with(rng, seq, row_draw, out);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_dir() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    fn render(t: &Template, rng: &mut Rng, seq: u64) -> String {
        let mut out = Vec::new();
        t.render_into(rng, seq, &mut out);
        String::from_utf8(out).expect("utf8")
    }

    #[test]
    fn templates_render_literals_escapes_seq_and_rand() {
        let dir = tmp_dir();
        let mut rng = Rng::seeded(1);
        let t = Template::parse("/a?x={{y}}&n={seq}", dir.path()).unwrap();
        assert!(!t.is_static());
        assert_eq!(render(&t, &mut rng, 42), "/a?x={y}&n=42");
        let s = Template::parse("plain {{}} text", dir.path()).unwrap();
        assert!(s.is_static());
        assert_eq!(render(&s, &mut rng, 0), "plain {} text");
        let r = Template::parse("{rand:5:5}-{rand:0:0}", dir.path()).unwrap();
        assert_eq!(render(&r, &mut rng, 0), "5-0");
        assert_eq!(
            render(
                &Template::parse("{seq}", dir.path()).unwrap(),
                &mut rng,
                u64::MAX
            ),
            u64::MAX.to_string()
        );
    }

    #[test]
    fn rand_stays_in_range_and_reaches_both_ends() {
        let dir = tmp_dir();
        let t = Template::parse("{rand:1:150000}|{rand:3:7}", dir.path()).unwrap();
        let mut rng = Rng::seeded(9);
        let (mut lo_seen, mut hi_seen) = (false, false);
        for _ in 0..10_000 {
            let text = render(&t, &mut rng, 0);
            let (a, b) = text.split_once('|').unwrap();
            let a: u64 = a.parse().unwrap();
            let b: u64 = b.parse().unwrap();
            assert!((1..=150_000).contains(&a), "{a}");
            assert!((3..=7).contains(&b), "{b}");
            lo_seen |= b == 3;
            hi_seen |= b == 7;
        }
        assert!(lo_seen && hi_seen);
    }

    #[test]
    fn bad_templates_are_refused_with_a_fix() {
        let dir = tmp_dir();
        for (text, needle) in [
            ("{rnd:1:2}", "unknown placeholder {rnd:1:2}"),
            ("{rand:9:1}", "write {rand:1:9}"),
            ("{rand:1}", "needs two bounds"),
            ("{rand:a:2}", "not a whole number"),
            ("{seq", "unclosed"),
            ("a}b", "unmatched"),
            ("{csv:x.csv}", "needs a file and a column"),
            ("{csv:missing.csv:a}", "cannot read CSV file"),
            ("a\r\nb", "contains a CR"),
            ("{seq:1}", "unknown placeholder"),
        ] {
            let e = Template::parse(text, dir.path()).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn path_templates_refuse_spaces_and_non_ascii() {
        let dir = tmp_dir();
        let mut cache = CsvCache::default();
        let e = parse_template("/a b", dir.path(), Place::Path, &mut cache).unwrap_err();
        assert!(e.problem.contains("a space"), "{}", e.problem);
        assert!(parse_template("/é", dir.path(), Place::Path, &mut cache).is_err());
        assert!(parse_template("line\nbreak", dir.path(), Place::Body, &mut cache).is_ok());
    }

    #[test]
    fn csv_values_come_only_from_their_column_and_rows_stay_together() {
        let dir = tmp_dir();
        let mut text = String::from("name,password\n");
        for i in 0..50 {
            text.push_str(&format!("user{i},pw{i}\n"));
        }
        text.push_str("\"quoted, name\",\"pw\"\"q\"\n");
        std::fs::write(dir.path().join("users.csv"), text).unwrap();
        let t =
            Template::parse("{csv:users.csv:name}={csv:users.csv:password}", dir.path()).unwrap();
        let mut rng = Rng::seeded(4);
        let mut names = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let s = render(&t, &mut rng, 0);
            let (name, pw) = s.split_once('=').unwrap();
            if name == "quoted, name" {
                assert_eq!(pw, "pw\"q");
            } else {
                let n = name
                    .strip_prefix("user")
                    .expect("a name from the name column");
                assert_eq!(pw, format!("pw{n}"), "same row for both columns");
            }
            names.insert(name.to_string());
        }
        assert_eq!(names.len(), 51, "every row is reachable");
    }

    #[test]
    fn csv_problems_are_named() {
        let dir = tmp_dir();
        let write = |name: &str, body: &str| std::fs::write(dir.path().join(name), body).unwrap();
        write("empty.csv", "");
        write("header.csv", "a,b\n");
        write("two.csv", "a,b\n1,2\n");
        write("ragged.csv", "a,b\n1,2\n3\n");
        write("crlf.csv", "a\n\"x\r\ny\"\n");
        write("open.csv", "a\n\"x\n");
        for (text, needle) in [
            ("{csv:empty.csv:a}", "is empty"),
            ("{csv:header.csv:a}", "no data rows"),
            ("{csv:two.csv:c}", "has no column \"c\" (its columns: a, b)"),
            (
                "{csv:ragged.csv:a}",
                "line 3 has 1 values but the header has 2",
            ),
            ("{csv:crlf.csv:a}", "cannot go into a header"),
            ("{csv:open.csv:a}", "never closed"),
        ] {
            let e = Template::parse(text, dir.path()).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        // In a body, CR/LF values are fine; CRLF line ends and blank lines are handled.
        write("ok.csv", "a\r\n\r\n\"x\r\ny\"\r\n");
        let mut cache = CsvCache::default();
        let t = parse_template("{csv:ok.csv:a}", dir.path(), Place::Body, &mut cache).unwrap();
        let mut out = Vec::new();
        t.render_into(&mut Rng::seeded(1), 0, &mut out);
        assert_eq!(out, b"x\r\ny");
    }

    #[test]
    fn weights_are_honoured_within_one_and_a_half_points() {
        let weights = [20u32, 20, 60, 0, 7];
        let picker = WeightedPicker::new(&weights);
        let total: u32 = weights.iter().sum();
        let mut counts = [0u32; 5];
        let mut rng = Rng::seeded(5);
        let n = 100_000;
        for _ in 0..n {
            counts[picker.pick(&mut rng)] += 1;
        }
        for (w, c) in weights.iter().zip(counts) {
            let want = f64::from(*w) / f64::from(total) * 100.0;
            let got = f64::from(c) / f64::from(n) * 100.0;
            assert!((want - got).abs() <= 1.5, "weight {w}: {got}% vs {want}%");
        }
        assert_eq!(counts[3], 0, "weight 0 is never picked");
        assert_eq!(WeightedPicker::new(&[]).pick(&mut rng), 0);
        let even = WeightedPicker::new(&[0, 0]);
        assert!(even.pick(&mut rng) < 2);
    }

    #[test]
    fn think_parses_and_samples_with_the_right_means() {
        assert_eq!(Think::parse("0ms").unwrap(), Think::None);
        assert_eq!(Think::parse("none").unwrap(), Think::None);
        assert_eq!(
            Think::parse("100ms").unwrap(),
            Think::Fixed(Duration::from_millis(100))
        );
        assert_eq!(
            Think::parse("uniform:50ms:150ms").unwrap(),
            Think::Uniform(Duration::from_millis(50), Duration::from_millis(150))
        );
        assert_eq!(
            Think::parse("exp:1.5s").unwrap(),
            Think::Exponential(Duration::from_millis(1500))
        );
        for bad in [
            "100",
            "10 parsecs",
            "uniform:2s:1s",
            "exp:",
            "gauss:1ms",
            "2h",
            "-1ms",
        ] {
            assert!(Think::parse(bad).is_err(), "{bad}");
        }
        let mut rng = Rng::seeded(6);
        for think in [
            Think::Fixed(Duration::from_millis(100)),
            Think::Uniform(Duration::from_millis(50), Duration::from_millis(150)),
            Think::Exponential(Duration::from_millis(100)),
        ] {
            let n = 20_000u32;
            let mut sum = Duration::ZERO;
            for _ in 0..n {
                let d = think.sample(&mut rng);
                if let Think::Uniform(lo, hi) = think {
                    assert!(d >= lo && d <= hi);
                }
                sum += d;
            }
            let mean = (sum / n).as_secs_f64();
            let want = think.mean().as_secs_f64();
            assert!(
                (mean - want).abs() <= want * 0.05,
                "{think:?}: {mean} vs {want}"
            );
        }
        assert_eq!(Think::None.sample(&mut rng), Duration::ZERO);
    }

    #[test]
    fn status_ranges_parse_like_the_cli() {
        let s =
            |v: &[&str]| parse_status_ranges(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&["2xx", "304"]).unwrap(), vec![(200, 299), (304, 304)]);
        assert_eq!(s(&["200-204,404"]).unwrap(), vec![(200, 204), (404, 404)]);
        assert!(s(&[]).is_err());
        assert!(s(&["6xx"]).is_err());
        assert!(s(&["299-200"]).is_err());
        assert!(s(&["ok"]).is_err());
    }

    fn forum_def(dir: &Path, extra: &str) -> RequestDef {
        let text = format!(
            "[[request]]\nname = \"t\"\npath = \"/viewtopic.php?t={{rand:1:9}}\"\n{extra}\n"
        );
        let mut s = parse_str(&text, dir, "test.toml").unwrap();
        s.requests.remove(0)
    }

    #[test]
    fn encodes_a_get_request() {
        let dir = tmp_dir();
        let def = forum_def(dir.path(), "headers = { \"X-Forum\" = \"n{seq}\" }");
        let mut out = Vec::new();
        encode_into(&def, "h:81", false, false, &mut Rng::seeded(1), 7, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("GET /viewtopic.php?t="), "{text}");
        assert!(
            text.contains(" HTTP/1.1\r\nHost: h:81\r\nUser-Agent: webtune/"),
            "{text}"
        );
        assert!(
            text.contains("Accept: */*\r\nConnection: close\r\n"),
            "{text}"
        );
        assert!(text.ends_with("X-Forum: n7\r\n\r\n"), "{text}");
        assert!(!text.contains("Content-Length"));
    }

    #[test]
    fn encodes_a_templated_body_with_its_length_and_reuses_the_buffer() {
        let dir = tmp_dir();
        let def = forum_def(
            dir.path(),
            "method = \"POST\"\nbody = \"q={rand:1:100000}&n={seq}\"\nheaders = { Host = \"other\", Connection = \"keep-alive\" }",
        );
        let mut out = Vec::with_capacity(1024);
        let mut rng = Rng::seeded(2);
        for seq in 0..1000 {
            let cap = out.capacity();
            encode_into(&def, "h", true, true, &mut rng, seq, &mut out);
            assert_eq!(out.capacity(), cap, "no reallocation");
            let text = std::str::from_utf8(&out).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("POST /viewtopic.php?t="));
            assert!(head.contains(" HTTP/1.0\r\n"));
            assert!(
                body.starts_with("q=") && body.ends_with(&format!("&n={seq}")),
                "{body}"
            );
            assert!(
                head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())),
                "{head}"
            );
            assert_eq!(head.matches("Host:").count(), 1);
            assert!(head.contains("Host: other"));
            assert_eq!(head.matches("Connection:").count(), 1);
        }
    }

    #[test]
    fn static_body_and_keepalive_http11_defaults() {
        let dir = tmp_dir();
        let def = forum_def(dir.path(), "method = \"PUT\"\nbody = \"{{}}\"");
        assert!(def.body.is_static());
        let mut out = Vec::new();
        encode_into(&def, "h", true, false, &mut Rng::seeded(3), 0, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("Connection:"), "{text}");
        assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"), "{text}");
        assert!(def.status_ok(200) && def.status_ok(302) && !def.status_ok(404));
    }
}
