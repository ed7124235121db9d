//! A value parser that gives the completion scripts (`webtune completions SHELL`) an argument's
//! candidates — the lab's stack names and every parameter name for `--set` (which the binary
//! supplies: `vocabulary`), `--io`'s backends —
//! while parsing and refusing values exactly as the command did before: an unknown stack
//! still gets the lab's own one-line error with its "did you mean …" (issue 39: `lab run
//! <TAB>` offered file names). clap_complete writes an argument's possible values into the
//! script; a `PossibleValuesParser` would also make clap refuse other values in its own,
//! several-line words, so this parser only lists them.

use clap::builder::{PossibleValue, TypedValueParser};
use std::ffi::OsStr;

/// Candidates for completion, and how to parse a value.
#[derive(Clone)]
pub struct Candidates<T> {
    values: Vec<String>,
    parse: fn(&str) -> Result<T, String>,
}

impl<T> Candidates<T> {
    pub fn new(values: Vec<String>, parse: fn(&str) -> Result<T, String>) -> Candidates<T> {
        Candidates { values, parse }
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Candidates<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_str().ok_or_else(|| {
            clap::Error::raw(clap::error::ErrorKind::InvalidUtf8, "not UTF-8\n").with_cmd(cmd)
        })?;
        // Worded as clap words a value parser's refusal.
        (self.parse)(text).map_err(|e| {
            let arg = arg.map_or("the value".to_string(), |a| format!("'{a}'"));
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{text}' for {arg}: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.values.iter().map(|v| PossibleValue::new(v.clone())),
        ))
    }
}

/// Any text: the parser of an argument whose candidates only help completion (the library
/// that reads the value refuses an unknown one itself, suggesting the closest).
pub fn any_text(text: &str) -> Result<String, String> {
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_listed_and_any_value_still_parses() {
        let stacks = Candidates::new(vec!["nginx".into(), "apache-prefork".into()], any_text);
        let names: Vec<String> = stacks
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(names, ["nginx", "apache-prefork"]);
        let cmd = clap::Command::new("x");
        assert_eq!(
            stacks.parse_ref(&cmd, None, OsStr::new("ngnix")).unwrap(),
            "ngnix"
        );
    }
}
