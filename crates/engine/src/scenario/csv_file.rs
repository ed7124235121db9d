//! The CSV files `{csv:FILE:COLUMN}` placeholders draw from: read and checked once per
//! scenario (a header row of distinct names, one value per column in every row, at least
//! one data row), held as a table whose rows a request picks by one draw.
//!
//! The reader is our own, not the `csv` crate's: that one is lenient where a scenario is
//! refused with a message (a quote never closed, text after a closing quote, a lone CR
//! ending a record), and counts lines differently after CRLF.

use super::error::{problem, Problem};
use crate::rng::Rng;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The column values of one CSV file, loaded once at parse time.
pub(crate) struct CsvTable {
    pub(super) file: String,
    pub(super) columns: Vec<String>,
    /// Row-major: `cells[row * columns.len() + column]`.
    cells: Vec<Box<[u8]>>,
    pub(crate) rows: usize,
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
    pub(super) fn row(&self, row_draw: u64) -> usize {
        let mut x = row_draw ^ self.id;
        // A splitmix64 finaliser (see rng.rs) so files with equal row counts differ.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        ((u128::from(x) * self.rows as u128) >> 64) as usize
    }

    #[inline]
    pub(super) fn cell(&self, row: usize, column: usize) -> &[u8] {
        &self.cells[row * self.columns.len() + column]
    }
}

/// CSV tables already loaded while parsing one scenario, by path.
#[derive(Default)]
pub(super) struct CsvCache {
    tables: HashMap<PathBuf, Arc<CsvTable>>,
}

pub(super) fn load_csv(path: &Path, cache: &mut CsvCache) -> Result<Arc<CsvTable>, Problem> {
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
