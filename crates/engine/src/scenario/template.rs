//! Templates: text with placeholders (`{rand:LO:HI}`, `{seq}`, `{csv:FILE:COLUMN}`, `{{` /
//! `}}`), parsed once with the byte rules of where they are used (path, header, body) and
//! rendered per request without allocating.

use super::csv_file::{load_csv, CsvCache, CsvTable};
use super::error::{problem, Problem, ScenarioError};
use crate::rng::Rng;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Part {
    Literal(Box<[u8]>),
    Rand {
        lo: u64,
        hi: u64,
    },
    Seq,
    Csv {
        table: Arc<CsvTable>,
        column: usize,
    },
    /// Journeys: a value a step extracted (`{var:NAME}`), by its index in the journey.
    Var {
        index: usize,
        place: Place,
    },
    /// Journeys: a column of the virtual user's own row of the users file (`{user:COLUMN}`).
    User {
        table: Arc<CsvTable>,
        column: usize,
    },
}

/// What a journey step's templates read besides the rng: the virtual user's extracted
/// values (by index) and its row of the journey's users file.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub vars: &'a [Vec<u8>],
    pub row: usize,
}

/// While a journey's step is parsed: the values earlier steps extract (their index is the
/// position), the ones only later steps do, and the journey's users file.
pub(super) struct Scope<'a> {
    pub(super) known: &'a [String],
    pub(super) later: &'a [String],
    pub(super) users: Option<&'a Arc<CsvTable>>,
}

/// Where a template is used decides which bytes it may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// The request target: visible ASCII only (no space, no control, nothing above 0x7e).
    Path,
    /// A header value: no CR, LF, NUL or other control byte except tab.
    Header,
    /// The body: anything.
    Body,
}

impl Place {
    /// The first byte not allowed here, if any.
    pub(super) fn bad_byte(self, bytes: &[u8]) -> Option<u8> {
        match self {
            Place::Path => bytes.iter().copied().find(|b| !(0x21..=0x7e).contains(b)),
            Place::Header => bytes
                .iter()
                .copied()
                .find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f),
            Place::Body => None,
        }
    }

    pub(super) fn rule(self) -> &'static str {
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
    pub(super) has_csv: bool,
}

impl Default for Template {
    fn default() -> Template {
        Template::literal(Vec::new())
    }
}

impl Template {
    /// A template without placeholders.
    pub(super) fn literal(bytes: Vec<u8>) -> Template {
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
        self.render_with(rng, seq, row_draw, None, out);
    }

    /// Render with a given CSV row draw, so that several templates of one request share rows.
    #[inline]
    pub(super) fn render_with(
        &self,
        rng: &mut Rng,
        seq: u64,
        row_draw: u64,
        ctx: Option<&Ctx>,
        out: &mut Vec<u8>,
    ) {
        for part in &self.parts {
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::Rand { lo, hi } => push_decimal(out, rng.between(*lo, *hi)),
                Part::Seq => push_decimal(out, seq),
                Part::Csv { table, column } => {
                    out.extend_from_slice(table.cell(table.row(row_draw), *column))
                }
                Part::Var { index, place } => {
                    if let Some(value) = ctx.and_then(|c| c.vars.get(*index)) {
                        push_value(out, value, *place);
                    }
                }
                Part::User { table, column } => {
                    if let Some(c) = ctx {
                        out.extend_from_slice(table.cell(c.row % table.rows, *column));
                    }
                }
            }
        }
    }
}

/// Append a value taken from a response where `place` allows it: in a path, bytes that may
/// not stand there are percent-encoded (RFC 3986 §2.1); in a header, control bytes are
/// dropped (they would end the header); a body takes it as it is.
fn push_value(out: &mut Vec<u8>, value: &[u8], place: Place) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    match place {
        Place::Body => out.extend_from_slice(value),
        Place::Header => out.extend(value.iter().copied().filter(|&b| b >= 0x20 && b != 0x7f)),
        Place::Path => {
            for &b in value {
                if (0x21..=0x7e).contains(&b) && b != b'%' {
                    out.push(b);
                } else {
                    out.extend_from_slice(&[
                        b'%',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]);
                }
            }
        }
    }
}

/// Append `value` in decimal without allocating.
#[inline]
pub(super) fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
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

pub(super) fn parse_template(
    text: &str,
    base_dir: &Path,
    place: Place,
    cache: &mut CsvCache,
) -> Result<Template, Problem> {
    parse_template_in(text, base_dir, place, cache, None)
}

/// `parse_template` for a journey's step: `{var:NAME}` and `{user:COLUMN}` are resolved in
/// `scope` (elsewhere they are refused).
pub(super) fn parse_template_in(
    text: &str,
    base_dir: &Path,
    place: Place,
    cache: &mut CsvCache,
    scope: Option<&Scope>,
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
        let part = parse_placeholder(inner, base_dir, place, cache, scope)?;
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

const PLACEHOLDERS: &str = "use {rand:LO:HI}, {seq}, {csv:FILE:COLUMN} (in journeys also {var:NAME} and {user:COLUMN}), or write {{ and }} for literal braces";

/// Every value of a CSV column must be allowed where the template puts it.
fn check_column(table: &CsvTable, column: usize, name: &str, place: Place) -> Result<(), Problem> {
    for row in 0..table.rows {
        if let Some(b) = place.bad_byte(table.cell(row, column)) {
            return Err(problem(
                format!(
                    "{} column {name:?} data row {} contains {}, which cannot go {}",
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
    Ok(())
}

fn parse_placeholder(
    inner: &str,
    base_dir: &Path,
    place: Place,
    cache: &mut CsvCache,
    scope: Option<&Scope>,
) -> Result<Part, Problem> {
    let (kind, args) = inner.split_once(':').unwrap_or((inner, ""));
    match kind.trim() {
        "var" | "user" if scope.is_none() => Err(problem(
            format!("{{{inner}}} is only known in a journey's steps"),
            "use {var:NAME} and {user:COLUMN} inside [[journey.step]] tables",
        )),
        "var" => {
            let scope = scope.expect("checked above");
            let name = args.trim();
            match scope.known.iter().position(|v| v == name) {
                Some(index) => Ok(Part::Var { index, place }),
                None if scope.later.iter().any(|v| v == name) => Err(problem(
                    format!("{{{inner}}} is used before any step extracts {name:?}"),
                    "extract it in an earlier step, or move this step after the one that does",
                )),
                None => Err(problem(
                    format!("unknown variable {{{inner}}} (no step extracts {name:?})"),
                    "add extract = { NAME = 'pattern' } to an earlier step, or fix the name",
                )),
            }
        }
        "user" => {
            let scope = scope.expect("checked above");
            let name = args.trim();
            let Some(table) = scope.users else {
                return Err(problem(
                    format!("{{{inner}}}: the journey has no users file"),
                    "add users = \"users.csv\" to the [[journey]] table",
                ));
            };
            let column = table
                .columns
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| {
                    problem(
                        format!(
                            "{{{inner}}}: {} has no column {name:?} (its columns: {})",
                            table.file,
                            table.columns.join(", ")
                        ),
                        "use one of those names",
                    )
                })?;
            check_column(table, column, name, place)?;
            Ok(Part::User {
                table: Arc::clone(table),
                column,
            })
        }
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
            check_column(&table, column, column_name, place)?;
            Ok(Part::Csv { table, column })
        }
        _ => Err(problem(
            format!("unknown placeholder {{{inner}}}"),
            PLACEHOLDERS,
        )),
    }
}
