//! The output formats a single result can be rendered in (`--format`): their names and how
//! a name is read. `webtune-report` renders them (`render`); the command-line grammar
//! (`webtune-cli`) parses `--format` into one without depending on the renderer.

use std::fmt;
use std::str::FromStr;

/// How to render one result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The human summary.
    Text,
    /// ApacheBench's layout.
    Ab,
    /// http_load's layout, with webtune's percentiles beneath.
    HttpLoad,
    /// The full result, `webtune.run/1`.
    Json,
    /// A header line and one line of figures.
    Csv,
    /// A self-contained HTML page with SVG plots.
    Html,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Ab,
        Format::HttpLoad,
        Format::Json,
        Format::Csv,
        Format::Html,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Ab => "ab",
            Format::HttpLoad => "http_load",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}; use one of text, ab, http_load, json, csv, html")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Format::ALL
            .into_iter()
            .find(|f| f.name() == wanted || (wanted == "httpload" && *f == Format::HttpLoad))
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!("http-load".parse::<Format>(), Ok(Format::HttpLoad));
        assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
        let err = "xml".parse::<Format>().unwrap_err().to_string();
        assert!(err.contains("unknown format \"xml\""), "{err}");
    }
}
