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
//!
//! One file per part: `error` (the one-line messages), `think` (think times), `template`
//! (placeholders, parsed once and rendered per request), `csv_file` (the CSV files templates
//! draw from), `picker` (the weighted choice), `encode` (one request's bytes) and `parse`
//! (the TOML file, checked key by key), `journey` and `journey_parse` (ordered steps walked
//! by virtual users, and their reading). This file holds the validated scenario's types.

mod csv_file;
mod encode;
mod error;
mod journey;
mod journey_parse;
#[cfg(test)]
mod journey_tests;
mod parse;
mod picker;
mod request;
mod template;
#[cfg(test)]
mod tests;
mod think;

pub use encode::{encode_into, encode_step_into};
pub use error::ScenarioError;
pub use journey::{Block, Cursor, Extract, Journey, Pattern, Repeat, Step};
pub use parse::{load, parse_str, url_mix};
pub use picker::WeightedPicker;
pub use request::parse_status_ranges;
pub use template::{Ctx, Template};
pub use think::Think;

/// A whole, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `base_url` from the file; a URL on the command line overrides it.
    pub base_url: Option<String>,
    /// Pause per connection between a response and the next request (closed loop).
    pub think: Think,
    /// The weighted mix (empty when the file has journeys).
    pub requests: Vec<RequestDef>,
    /// `[[journey]]` tables: ordered steps walked by virtual users (empty for a mix).
    pub journeys: Vec<Journey>,
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

    pub(crate) fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}
