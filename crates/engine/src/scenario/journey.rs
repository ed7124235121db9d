//! Journeys: ordered steps one virtual user walks (`[[journey]]` with `[[journey.step]]`),
//! each a request with the keys of `[[request]]` plus `extract` (a value taken from the
//! answer for later steps' `{var:NAME}`), `think`, `repeat` and `once`; a step with steps of
//! its own (`[[journey.step.step]]`) is a group repeated as a whole. This file holds the
//! validated types and the rules a walk follows (`Journey::next`); `journey_parse` reads
//! them from the TOML. Walking them with a cookie jar per user is the engine's (`journey`).

use super::csv_file::CsvTable;
use super::think::Think;
use super::RequestDef;
use crate::rng::Rng;
use std::sync::Arc;

/// One `[[journey]]`, validated.
#[derive(Debug, Clone)]
pub struct Journey {
    pub name: String,
    pub weight: u32,
    /// The users file (`users`): each virtual user keeps one row for its whole life.
    pub(crate) users: Option<Arc<CsvTable>>,
    /// `unique_users = true`: no two virtual users share a row.
    pub unique_users: bool,
    /// The steps in walking order, groups flattened.
    pub steps: Vec<Step>,
    /// Runs of consecutive steps repeated together: a single step is a block of one.
    pub blocks: Vec<Block>,
    /// The names of the values the steps extract; a `{var:...}` holds an index into it.
    pub vars: Vec<String>,
}

/// One request of a journey.
#[derive(Debug, Clone)]
pub struct Step {
    pub request: RequestDef,
    pub extract: Vec<Extract>,
    /// The pause after this step's answer (None: the file's `think`).
    pub think: Option<Think>,
    /// Run only at the user's start (`once = true`), not in later walks.
    pub once: bool,
    /// The block this step belongs to.
    pub block: usize,
}

/// Steps `start..end`, walked `repeat` times in a row.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub start: usize,
    pub end: usize,
    pub repeat: Repeat,
}

/// How many times a step or group runs in a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    Times(u32),
    /// Uniformly between the two, inclusive, drawn each time the block begins.
    Rand(u32, u32),
}

impl Repeat {
    pub fn sample(self, rng: &mut Rng) -> u32 {
        match self {
            Repeat::Times(n) => n,
            Repeat::Rand(lo, hi) => rng.between(u64::from(lo), u64::from(hi)) as u32,
        }
    }
}

/// One `extract` entry: the value goes into variable `var`.
#[derive(Debug, Clone)]
pub struct Extract {
    pub var: usize,
    pub pattern: Pattern,
}

/// Where in the answer's body an extracted value is found.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// A regular expression's first capture group (the whole match when it has none).
    Regex(regex::bytes::Regex),
    /// A JSON pointer (RFC 6901) into the body parsed as JSON (`json:/data/id`).
    Json(String),
}

impl Pattern {
    /// The value in `body`, or None when it is not there.
    pub fn find<'a>(&self, body: &'a [u8]) -> Option<std::borrow::Cow<'a, [u8]>> {
        match self {
            Pattern::Regex(re) => {
                let caps = re.captures(body)?;
                let m = caps.get(1).or_else(|| caps.get(0))?;
                Some(std::borrow::Cow::Borrowed(m.as_bytes()))
            }
            Pattern::Json(pointer) => {
                let doc: serde_json::Value = serde_json::from_slice(body).ok()?;
                let value = match doc.pointer(pointer)? {
                    serde_json::Value::Null => return None,
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Some(std::borrow::Cow::Owned(value.into_bytes()))
            }
        }
    }
}

/// Where a user is in its journey: the step, and the walks of the current block left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub step: usize,
    pub left: u32,
}

impl Journey {
    /// Rows in the users file (0: none).
    pub fn user_rows(&self) -> usize {
        self.users.as_ref().map_or(0, |t| t.rows)
    }

    /// The first step of a walk: the start (once steps included) for a new user, else the
    /// first step after the once steps. None when every block drew 0 repeats.
    pub fn begin(&self, new_user: bool, rng: &mut Rng) -> Option<Cursor> {
        let first = if new_user {
            0
        } else {
            self.steps.iter().position(|s| !s.once)?
        };
        let block = self.steps.get(first)?.block;
        self.enter(block, rng)
    }

    /// The step after the one at `at` finished, or None when the walk is done.
    pub fn next(&self, at: Cursor, rng: &mut Rng) -> Option<Cursor> {
        let block = &self.blocks[self.steps[at.step].block];
        if at.step + 1 < block.end {
            return Some(Cursor {
                step: at.step + 1,
                left: at.left,
            });
        }
        if at.left > 1 {
            return Some(Cursor {
                step: block.start,
                left: at.left - 1,
            });
        }
        self.enter(self.steps[at.step].block + 1, rng)
    }

    /// The first step of block `index` or a later one (a block that drew 0 repeats is
    /// skipped); None past the last.
    fn enter(&self, mut index: usize, rng: &mut Rng) -> Option<Cursor> {
        while let Some(block) = self.blocks.get(index) {
            let left = block.repeat.sample(rng);
            if left > 0 {
                return Some(Cursor {
                    step: block.start,
                    left,
                });
            }
            index += 1;
        }
        None
    }
}
