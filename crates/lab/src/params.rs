//! Tunable parameters: their declaration (name, type, range or choices, default, the
//! server's own directive, meaning), parsing of `NAME=VALUE` assignments, and validation.
//! A value that leaves this module is typed and in range, so rendering can never inject a
//! directive through it.

use crate::LabError;
use std::collections::BTreeMap;
use std::fmt;

/// The type and the allowed values of one parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// A whole number in `min..=max`; `keyword`, when present, is one extra word accepted
    /// as a value (nginx's `auto`).
    Int {
        min: i64,
        max: i64,
        keyword: Option<&'static str>,
    },
    /// A decimal number in `min..=max`.
    Float { min: f64, max: f64 },
    /// `on` or `off`.
    Switch,
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
}

impl ParamKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            ParamKind::Int { .. } => "int",
            ParamKind::Float { .. } => "number",
            ParamKind::Switch => "on/off",
            ParamKind::Choice(_) => "choice",
        }
    }

    /// The allowed values as a person reads them: `1..=64 or auto`, `on|off`, `a|b|c`.
    pub fn allowed(&self) -> String {
        match self {
            ParamKind::Int { min, max, keyword } => match keyword {
                Some(word) => format!("{min}..={max} or {word}"),
                None => format!("{min}..={max}"),
            },
            ParamKind::Float { min, max } => format!("{min}..={max}"),
            ParamKind::Switch => "on|off".to_string(),
            ParamKind::Choice(words) => words.join("|"),
        }
    }
}

/// A typed, validated parameter value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Switch(bool),
    /// A word from the parameter's fixed list (or its keyword, such as `auto`).
    Word(&'static str),
}

impl Value {
    /// The integer, or None for a keyword or another type.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_switch(&self) -> Option<bool> {
        match self {
            Value::Switch(b) => Some(*b),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            // Shortest text that reads back as the same number; never an exponent for the
            // ranges we allow.
            Value::Float(x) => write!(f, "{x}"),
            Value::Switch(true) => f.write_str("on"),
            Value::Switch(false) => f.write_str("off"),
            Value::Word(w) => f.write_str(w),
        }
    }
}

/// A parameter that does nothing while another has one of some values (Apache's
/// `KeepAliveTimeout` under `KeepAlive off`): a server module declares them, so a tuner
/// neither recommends nor credits a value that changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct InertRule {
    /// The parameter that does nothing.
    pub param: String,
    /// The parameter it depends on.
    pub when: String,
    /// The values of `when` (as `NAME=VALUE` writes them) under which `param` is inert.
    pub values: Vec<&'static str>,
}

impl InertRule {
    pub fn new(param: &str, when: &str, values: &[&'static str]) -> InertRule {
        InertRule {
            param: param.to_string(),
            when: when.to_string(),
            values: values.to_vec(),
        }
    }

    /// The same rule with both names under `prefix` (`backend.`).
    pub fn prefixed(self, prefix: &str) -> InertRule {
        InertRule {
            param: format!("{prefix}{}", self.param),
            when: format!("{prefix}{}", self.when),
            values: self.values,
        }
    }

    /// Is `param` inert when `when` has `value`?
    pub fn applies(&self, value: &str) -> bool {
        self.values
            .iter()
            .any(|v| v.eq_ignore_ascii_case(value.trim()))
    }
}

/// One tunable parameter of a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// The name used with `--set` (prefixed `frontend.` / `backend.` in proxy stacks).
    pub name: String,
    pub kind: ParamKind,
    pub default: Value,
    /// The server's own directive this parameter renders into.
    pub directive: &'static str,
    /// One line: what it changes.
    pub meaning: &'static str,
}

impl ParamSpec {
    /// A whole number in `min..=max`.
    pub fn int(
        name: &str,
        (min, max): (i64, i64),
        default: i64,
        directive: &'static str,
        meaning: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name: name.to_string(),
            kind: ParamKind::Int {
                min,
                max,
                keyword: None,
            },
            default: Value::Int(default),
            directive,
            meaning,
        }
    }

    /// `on` or `off`.
    pub fn switch(
        name: &str,
        default: bool,
        directive: &'static str,
        meaning: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name: name.to_string(),
            kind: ParamKind::Switch,
            default: Value::Switch(default),
            directive,
            meaning,
        }
    }

    /// One of `words`.
    pub fn choice(
        name: &str,
        words: &'static [&'static str],
        default: &'static str,
        directive: &'static str,
        meaning: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name: name.to_string(),
            kind: ParamKind::Choice(words),
            default: Value::Word(default),
            directive,
            meaning,
        }
    }

    /// The same parameter under `prefix` (`backend.`, `db.`).
    pub fn prefixed(mut self, prefix: &str) -> ParamSpec {
        self.name = format!("{prefix}{}", self.name);
        self
    }

    /// Parse and range-check a value given as text.
    pub fn parse(&self, text: &str) -> Result<Value, LabError> {
        let refuse = || LabError::OutOfRange {
            name: self.name.clone(),
            value: text.to_string(),
            allowed: self.kind.allowed(),
        };
        let wrong_kind = |expected| LabError::NotAllowed {
            name: self.name.clone(),
            value: text.to_string(),
            expected,
            allowed: self.kind.allowed(),
        };
        let text = text.trim();
        match &self.kind {
            ParamKind::Int { min, max, keyword } => {
                if let Some(word) = keyword {
                    if text.eq_ignore_ascii_case(word) {
                        return Ok(Value::Word(word));
                    }
                }
                // Digits only: no sign tricks, no spaces, no units. A negative number is
                // a number out of range; a fraction or a word is not a whole number.
                if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(match looks_numeric(text) {
                        true if !text.contains('.') => refuse(),
                        true => wrong_kind("a whole number"),
                        false => wrong_kind("a number"),
                    });
                }
                let n: i64 = text.parse().map_err(|_| refuse())?;
                if n < *min || n > *max {
                    return Err(refuse());
                }
                Ok(Value::Int(n))
            }
            ParamKind::Float { min, max } => {
                if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                    return Err(if looks_numeric(text) {
                        refuse()
                    } else {
                        wrong_kind("a number")
                    });
                }
                let x: f64 = text.parse().map_err(|_| refuse())?;
                if !x.is_finite() || x < *min || x > *max {
                    return Err(refuse());
                }
                Ok(Value::Float(x))
            }
            ParamKind::Switch => match text.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => Ok(Value::Switch(true)),
                "off" | "false" | "no" | "0" => Ok(Value::Switch(false)),
                _ => Err(wrong_kind("on or off")),
            },
            ParamKind::Choice(words) => words
                .iter()
                .find(|w| w.eq_ignore_ascii_case(text))
                .map(|w| Value::Word(w))
                .ok_or_else(|| wrong_kind("one of the choices")),
        }
    }
}

/// Digits with at most one '.', after an optional '-': a number, even if not one allowed.
fn looks_numeric(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    digits.bytes().any(|b| b.is_ascii_digit())
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && digits.matches('.').count() <= 1
}

/// Split `NAME=VALUE`.
pub fn parse_assignment(text: &str) -> Result<(String, String), LabError> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(LabError::BadAssignment(text.to_string())),
    }
}

/// A complete, validated parameter set for one stack: every declared parameter has a value
/// (the default where none was set).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    values: BTreeMap<String, Value>,
    explicitly_set: Vec<String>,
}

impl Settings {
    /// Validate assignments against the declared parameters. Unknown names and bad values
    /// are refused with the parameter's range; nothing is started before this passes.
    pub fn from_assignments(
        stack: &str,
        specs: &[ParamSpec],
        assignments: &[(String, String)],
    ) -> Result<Settings, LabError> {
        let mut values: BTreeMap<String, Value> =
            specs.iter().map(|s| (s.name.clone(), s.default)).collect();
        let mut explicitly_set = Vec::new();
        for (name, text) in assignments {
            let spec = specs
                .iter()
                .find(|s| s.name == *name)
                .or_else(|| specs.iter().find(|s| s.name.eq_ignore_ascii_case(name)))
                .ok_or_else(|| LabError::UnknownParameter {
                    stack: stack.to_string(),
                    name: name.clone(),
                    suggestion: crate::error::did_you_mean(
                        name,
                        specs.iter().map(|s| s.name.as_str()),
                    ),
                })?;
            if explicitly_set.contains(&spec.name) {
                return Err(LabError::DuplicateParameter(spec.name.clone()));
            }
            values.insert(spec.name.clone(), spec.parse(text)?);
            explicitly_set.push(spec.name.clone());
        }
        Ok(Settings {
            values,
            explicitly_set,
        })
    }

    /// The value of a declared parameter (full name, prefix included).
    pub fn get(&self, name: &str) -> Option<Value> {
        self.values.get(name).copied()
    }

    /// Every parameter and its value, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Value)> {
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The names the user set (the rest are defaults).
    pub fn explicitly_set(&self) -> &[String] {
        &self.explicitly_set
    }

    /// `name=value` for every parameter the user set, in the order given.
    pub fn describe_changes(&self) -> String {
        let parts: Vec<String> = self
            .explicitly_set
            .iter()
            .filter_map(|n| self.values.get(n).map(|v| format!("{n}={v}")))
            .collect();
        if parts.is_empty() {
            "defaults".to_string()
        } else {
            parts.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_spec(name: &str, min: i64, max: i64) -> ParamSpec {
        ParamSpec::int(name, (min, max), min, "X", "x")
    }

    #[test]
    fn ints_refuse_injection_and_out_of_range() {
        let s = int_spec("MaxRequestWorkers", 1, 100);
        assert_eq!(s.parse("4").unwrap(), Value::Int(4));
        for bad in [
            "0",
            "101",
            "4\nUser root",
            "4;",
            "-1",
            "+4",
            "4 5",
            "",
            "1e3",
        ] {
            let err = s.parse(bad).unwrap_err().to_string();
            assert!(err.contains("1..=100"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn switches_choices_and_keywords() {
        let sw = ParamSpec {
            kind: ParamKind::Switch,
            default: Value::Switch(true),
            ..int_spec("KeepAlive", 0, 0)
        };
        assert_eq!(sw.parse("Off").unwrap(), Value::Switch(false));
        assert!(sw.parse("maybe").is_err());
        let ch = ParamSpec {
            kind: ParamKind::Choice(&["static", "dynamic"]),
            default: Value::Word("dynamic"),
            ..int_spec("pm", 0, 0)
        };
        assert_eq!(ch.parse("STATIC").unwrap().to_string(), "static");
        assert!(ch.parse("static\n").is_ok());
        assert!(ch.parse("static;x").is_err());
        let kw = ParamSpec {
            kind: ParamKind::Int {
                min: 1,
                max: 64,
                keyword: Some("auto"),
            },
            ..int_spec("worker_processes", 1, 64)
        };
        assert_eq!(kw.parse("auto").unwrap().to_string(), "auto");
        assert_eq!(kw.parse("2").unwrap(), Value::Int(2));
    }

    #[test]
    fn a_word_is_not_a_number_and_a_number_is_out_of_range() {
        let kw = ParamSpec {
            kind: ParamKind::Int {
                min: 1,
                max: 64,
                keyword: Some("auto"),
            },
            ..int_spec("worker_processes", 1, 64)
        };
        let err = |v: &str| kw.parse(v).unwrap_err().to_string();
        assert_eq!(
            err("abc"),
            "parameter worker_processes: \"abc\" is not a number; allowed: 1..=64 or auto"
        );
        assert!(
            err("1.5").contains("is not a whole number"),
            "{}",
            err("1.5")
        );
        assert!(err("65").contains("is out of range"), "{}", err("65"));
        assert!(err("-3").contains("is out of range"), "{}", err("-3"));
        let sw = ParamSpec {
            kind: ParamKind::Switch,
            default: Value::Switch(true),
            ..int_spec("KeepAlive", 0, 0)
        };
        let e = sw.parse("maybe").unwrap_err().to_string();
        assert!(e.contains("is not on or off; allowed: on|off"), "{e}");
    }

    #[test]
    fn settings_fill_defaults_and_refuse_unknown() {
        let specs = vec![int_spec("a", 1, 10), int_spec("b", 1, 10)];
        let set = Settings::from_assignments("s", &specs, &[("b".into(), "7".into())]).unwrap();
        assert_eq!(set.get("a"), Some(Value::Int(1)));
        assert_eq!(set.get("b"), Some(Value::Int(7)));
        assert_eq!(set.describe_changes(), "b=7");
        let err = Settings::from_assignments("s", &specs, &[("c".into(), "1".into())]);
        assert!(err.unwrap_err().to_string().contains("lab params s"));
        let dup = Settings::from_assignments(
            "s",
            &specs,
            &[("a".into(), "1".into()), ("a".into(), "2".into())],
        );
        assert!(dup.is_err());
        assert!(parse_assignment("novalue").is_err());
        assert_eq!(
            parse_assignment("x=1").unwrap(),
            ("x".to_string(), "1".to_string())
        );
    }
}
