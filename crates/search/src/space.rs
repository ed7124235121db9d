//! The search space: which parameters the tuner may change and over which values, parsed
//! from the `--param` grammar (`NAME=LO..HI`, `NAME=LO..HI:log`, `NAME=a,b,c`) and checked
//! against the catalogue of parameters the lab knows (their real ranges). Owns `Config`
//! (one value per parameter) and the unit-cube encoding the optimizer works in.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Why a `--param` was refused. Every message names the parameter's real range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpaceError {
    #[error("--param {0:?}: expected NAME=LO..HI, NAME=LO..HI:log or NAME=a,b,c")]
    Syntax(String),
    #[error("--param {name}: unknown parameter (known: {known})")]
    Unknown { name: String, known: String },
    #[error("--param {name}={given}: out of range; {name} takes {allowed}")]
    OutOfRange {
        name: String,
        given: String,
        allowed: String,
    },
    #[error("--param {name}={given}: empty range (LO must be below HI); {name} takes {allowed}")]
    EmptyRange {
        name: String,
        given: String,
        allowed: String,
    },
    #[error("--param {name}={given}: a log scale needs LO >= 1; {name} takes {allowed}")]
    LogBelowOne {
        name: String,
        given: String,
        allowed: String,
    },
    #[error("--param {name}={given}: {name} takes one of {allowed}, not a range")]
    NotARange {
        name: String,
        given: String,
        allowed: String,
    },
    #[error("--param {0} given twice")]
    Duplicate(String),
    #[error("no --param given: nothing to tune")]
    Empty,
}

/// What the lab says a parameter accepts: its real range.
#[derive(Debug, Clone, PartialEq)]
pub enum KnownKind {
    /// Integers in `min..=max`, plus extra words (nginx's `auto`) usable as choices.
    Int {
        min: i64,
        max: i64,
        keywords: Vec<String>,
    },
    /// One of a fixed list of words (`on`/`off` included).
    Choice(Vec<String>),
}

impl KnownKind {
    /// The allowed values as a person reads them: `1..=64 (or auto)`, `on|off`.
    pub fn allowed(&self) -> String {
        match self {
            KnownKind::Int { min, max, keywords } if keywords.is_empty() => {
                format!("{min}..={max}")
            }
            KnownKind::Int { min, max, keywords } => {
                format!("{min}..={max} (or {})", keywords.join("|"))
            }
            KnownKind::Choice(words) => words.join("|"),
        }
    }
}

/// One entry of the catalogue the caller passes: a parameter the lab can set.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownParam {
    pub name: String,
    pub kind: KnownKind,
    /// The stack's default, as the lab renders it.
    pub default: String,
}

/// A parameter's value in a configuration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Word(String),
}

impl Value {
    pub fn parse(text: &str) -> Value {
        match text.trim().parse::<i64>() {
            Ok(n) => Value::Int(n),
            Err(_) => Value::Word(text.trim().to_string()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Word(w) => f.write_str(w),
        }
    }
}

/// One configuration: parameter name → value, ordered by name.
pub type Config = BTreeMap<String, Value>;

/// Render a configuration as `a=1 b=on`.
pub fn render(config: &Config) -> String {
    config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The values one searched parameter may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Int { lo: i64, hi: i64, log: bool },
    Choice(Vec<Value>),
}

/// One searched parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub kind: Kind,
    /// The stack's default (it may lie outside the searched range).
    pub default: Value,
}

impl ParamSpec {
    /// Number of distinct values.
    pub fn cardinality(&self) -> u64 {
        match &self.kind {
            Kind::Int { lo, hi, .. } => (hi - lo) as u64 + 1,
            Kind::Choice(c) => c.len() as u64,
        }
    }

    /// The value at position `u` in 0..1.
    pub fn decode(&self, u: f64) -> Value {
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.5
        };
        match &self.kind {
            Kind::Int { lo, hi, log: false } => {
                let n = (hi - lo + 1) as f64;
                Value::Int((lo + (u * n).floor() as i64).min(*hi))
            }
            Kind::Int { lo, hi, log: true } => {
                let (a, b) = log_bounds(*lo, *hi);
                let v = (a + u * (b - a)).exp().round() as i64;
                Value::Int(v.clamp(*lo, *hi))
            }
            Kind::Choice(c) => {
                let i = ((u * c.len() as f64).floor() as usize).min(c.len() - 1);
                c[i].clone()
            }
        }
    }

    /// The position of a value: in 0..1 for values of the space; outside it for an integer
    /// default beyond the range; -1 for a word not among the choices.
    pub fn encode(&self, v: &Value) -> f64 {
        match (&self.kind, v) {
            (Kind::Int { lo, hi, log: false }, Value::Int(x)) => {
                (x - lo) as f64 / (hi - lo + 1) as f64 + 0.5 / (hi - lo + 1) as f64
            }
            (Kind::Int { lo, hi, log: true }, Value::Int(x)) => {
                let (a, b) = log_bounds(*lo, *hi);
                (((*x).max(1) as f64).ln() - a) / (b - a)
            }
            (Kind::Choice(c), v) => match c.iter().position(|x| x == v) {
                Some(i) => (i as f64 + 0.5) / c.len() as f64,
                None => -1.0,
            },
            (Kind::Int { .. }, Value::Word(_)) => -1.0,
        }
    }

    pub fn is_choice(&self) -> bool {
        matches!(self.kind, Kind::Choice(_))
    }
}

fn log_bounds(lo: i64, hi: i64) -> (f64, f64) {
    ((lo as f64 - 0.5).max(0.5).ln(), (hi as f64 + 0.5).ln())
}

/// The searched parameters, in the order given, and which of them do nothing under which
/// values of another (the server modules' `lab::InertRule`s, set by the subject).
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub params: Vec<ParamSpec>,
    pub inert: Vec<Inert>,
}

/// A searched parameter that does nothing while `when` (a searched parameter) has one of
/// its values, or always (`when` None: the parameter it depends on is fixed at such a
/// value).
#[derive(Debug, Clone, PartialEq)]
pub struct Inert {
    pub param: String,
    pub when: Option<(String, Vec<String>)>,
}

impl Space {
    /// Build from `--param` texts, checked against the catalogue.
    pub fn parse(texts: &[String], catalogue: &[KnownParam]) -> Result<Space, SpaceError> {
        if texts.is_empty() {
            return Err(SpaceError::Empty);
        }
        let mut params: Vec<ParamSpec> = Vec::new();
        for text in texts {
            let p = parse_param(text, catalogue)?;
            if params.iter().any(|q| q.name == p.name) {
                return Err(SpaceError::Duplicate(p.name));
            }
            params.push(p);
        }
        Ok(Space {
            params,
            inert: Vec::new(),
        })
    }

    /// The searched parameters that do nothing in `config`.
    pub fn inert_in(&self, config: &Config) -> Vec<String> {
        self.inert
            .iter()
            .filter(|i| match &i.when {
                None => true,
                Some((when, values)) => config.get(when).is_some_and(|v| {
                    let v = v.to_string();
                    values.iter().any(|w| w.eq_ignore_ascii_case(&v))
                }),
            })
            .map(|i| i.param.clone())
            .collect()
    }

    pub fn dims(&self) -> usize {
        self.params.len()
    }

    /// The stack's defaults for every searched parameter.
    pub fn default_config(&self) -> Config {
        self.params
            .iter()
            .map(|p| (p.name.clone(), p.default.clone()))
            .collect()
    }

    /// The configuration at a point of the unit cube.
    pub fn decode(&self, u: &[f64]) -> Config {
        self.params
            .iter()
            .zip(u)
            .map(|(p, x)| (p.name.clone(), p.decode(*x)))
            .collect()
    }

    /// A configuration's point (missing values read as the default).
    pub fn encode(&self, c: &Config) -> Vec<f64> {
        self.params
            .iter()
            .map(|p| p.encode(c.get(&p.name).unwrap_or(&p.default)))
            .collect()
    }

    /// Keep the searched parameters of a configuration (given as text), refusing values
    /// outside the space: used for the rule-of-thumb seeds.
    pub fn config_from_text(&self, pairs: &[(String, String)]) -> Config {
        let mut c = self.default_config();
        for (k, v) in pairs {
            if let Some(p) = self.params.iter().find(|p| &p.name == k) {
                let v = Value::parse(v);
                let pos = p.encode(&v);
                if (0.0..=1.0).contains(&pos) {
                    c.insert(k.clone(), v);
                } else if let (Kind::Int { lo, hi, .. }, Value::Int(x)) = (&p.kind, &v) {
                    c.insert(k.clone(), Value::Int((*x).clamp(*lo, *hi)));
                }
            }
        }
        c
    }
}

/// Parse one `--param` against the catalogue.
pub fn parse_param(text: &str, catalogue: &[KnownParam]) -> Result<ParamSpec, SpaceError> {
    let syntax = || SpaceError::Syntax(text.to_string());
    let (name, rhs) = text.split_once('=').ok_or_else(syntax)?;
    let (name, rhs) = (name.trim(), rhs.trim());
    if name.is_empty() || rhs.is_empty() {
        return Err(syntax());
    }
    let known = catalogue
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| SpaceError::Unknown {
            name: name.to_string(),
            known: catalogue
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let allowed = known.kind.allowed();
    let given = rhs.to_string();
    let default = Value::parse(&known.default);
    let out_of_range = || SpaceError::OutOfRange {
        name: name.to_string(),
        given: given.clone(),
        allowed: allowed.clone(),
    };
    let (range, log) = match rhs.strip_suffix(":log") {
        Some(r) => (r, true),
        None => (rhs, false),
    };
    if let Some((lo, hi)) = range.split_once("..") {
        let (min, max) = match &known.kind {
            KnownKind::Int { min, max, .. } => (*min, *max),
            KnownKind::Choice(_) => {
                return Err(SpaceError::NotARange {
                    name: name.to_string(),
                    given,
                    allowed,
                })
            }
        };
        let lo: i64 = lo.trim().parse().map_err(|_| syntax())?;
        let hi: i64 = hi.trim().parse().map_err(|_| syntax())?;
        if lo < min || hi > max {
            return Err(out_of_range());
        }
        if lo >= hi {
            return Err(SpaceError::EmptyRange {
                name: name.to_string(),
                given,
                allowed,
            });
        }
        if log && lo < 1 {
            return Err(SpaceError::LogBelowOne {
                name: name.to_string(),
                given,
                allowed,
            });
        }
        return Ok(ParamSpec {
            name: name.to_string(),
            kind: Kind::Int { lo, hi, log },
            default,
        });
    }
    if log {
        return Err(syntax());
    }
    let mut choices: Vec<Value> = Vec::new();
    for word in rhs.split(',').map(str::trim) {
        if word.is_empty() {
            return Err(syntax());
        }
        let ok = match &known.kind {
            KnownKind::Int { min, max, keywords } => match word.parse::<i64>() {
                Ok(n) => (*min..=*max).contains(&n),
                Err(_) => keywords.iter().any(|k| k == word),
            },
            KnownKind::Choice(words) => words.iter().any(|w| w == word),
        };
        if !ok {
            return Err(out_of_range());
        }
        let v = Value::parse(word);
        if !choices.contains(&v) {
            choices.push(v);
        }
    }
    Ok(ParamSpec {
        name: name.to_string(),
        kind: Kind::Choice(choices),
        default,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn catalogue() -> Vec<KnownParam> {
        vec![
            KnownParam {
                name: "backend.MaxRequestWorkers".into(),
                kind: KnownKind::Int {
                    min: 1,
                    max: 1024,
                    keywords: vec![],
                },
                default: "150".into(),
            },
            KnownParam {
                name: "frontend.worker_processes".into(),
                kind: KnownKind::Int {
                    min: 1,
                    max: 64,
                    keywords: vec!["auto".into()],
                },
                default: "auto".into(),
            },
            KnownParam {
                name: "backend.mpm".into(),
                kind: KnownKind::Choice(vec!["prefork".into(), "worker".into(), "event".into()]),
                default: "event".into(),
            },
        ]
    }

    fn parse(t: &str) -> Result<ParamSpec, SpaceError> {
        parse_param(t, &catalogue())
    }

    #[test]
    fn parses_the_three_forms() {
        let p = parse("backend.MaxRequestWorkers=2..64").unwrap();
        assert_eq!(
            p.kind,
            Kind::Int {
                lo: 2,
                hi: 64,
                log: false
            }
        );
        assert_eq!(p.default, Value::Int(150));
        let p = parse("backend.MaxRequestWorkers=2..512:log").unwrap();
        assert!(matches!(p.kind, Kind::Int { log: true, .. }));
        let p = parse("backend.mpm=event,worker").unwrap();
        assert_eq!(
            p.kind,
            Kind::Choice(vec![
                Value::Word("event".into()),
                Value::Word("worker".into())
            ])
        );
        let p = parse("frontend.worker_processes=auto,1,2").unwrap();
        assert_eq!(
            p.kind,
            Kind::Choice(vec![
                Value::Word("auto".into()),
                Value::Int(1),
                Value::Int(2)
            ])
        );
    }

    #[test]
    fn refusals_name_the_real_range() {
        let e = parse("backend.MaxRequestWorkers=0..5000").unwrap_err();
        assert!(e.to_string().contains("takes 1..=1024"), "{e}");
        let e = parse("backend.MaxRequestWorker=1..8").unwrap_err();
        assert!(matches!(e, SpaceError::Unknown { .. }));
        assert!(e.to_string().contains("backend.MaxRequestWorkers"), "{e}");
        let e = parse("backend.MaxRequestWorkers=64..2").unwrap_err();
        assert!(e.to_string().contains("empty range"), "{e}");
        let e = parse("backend.MaxRequestWorkers=0..8:log").unwrap_err();
        assert!(e.to_string().contains("1..=1024"), "{e}");
        let e = parse("backend.mpm=1..3").unwrap_err();
        assert!(e.to_string().contains("prefork|worker|event"), "{e}");
        let e = parse("backend.mpm=event,turbo").unwrap_err();
        assert!(e.to_string().contains("prefork|worker|event"), "{e}");
        let e = parse("frontend.worker_processes=auto,99").unwrap_err();
        assert!(e.to_string().contains("1..=64 (or auto)"), "{e}");
        assert!(matches!(parse("nonsense"), Err(SpaceError::Syntax(_))));
        assert!(matches!(
            parse("backend.MaxRequestWorkers=a..b"),
            Err(SpaceError::Syntax(_))
        ));
        let twice = vec![
            "backend.mpm=event".to_string(),
            "backend.mpm=worker".to_string(),
        ];
        assert!(matches!(
            Space::parse(&twice, &catalogue()),
            Err(SpaceError::Duplicate(_))
        ));
        assert_eq!(Space::parse(&[], &catalogue()), Err(SpaceError::Empty));
    }

    #[test]
    fn encoding_round_trips_every_value() {
        for text in [
            "backend.MaxRequestWorkers=2..64",
            "backend.MaxRequestWorkers=1..1024:log",
            "backend.mpm=prefork,worker,event",
        ] {
            let p = parse(text).unwrap();
            let values: Vec<Value> = match &p.kind {
                Kind::Int { lo, hi, .. } => (*lo..=*hi).map(Value::Int).collect(),
                Kind::Choice(c) => c.clone(),
            };
            for v in values {
                let u = p.encode(&v);
                assert!((0.0..=1.0).contains(&u), "{text} {v} -> {u}");
                assert_eq!(p.decode(u), v, "{text}");
            }
            assert!(p.decode(0.0) != p.decode(1.0));
        }
        // A default outside the searched range stays outside the cube.
        let p = parse("backend.MaxRequestWorkers=2..64").unwrap();
        assert!(p.encode(&p.default) > 1.0);
    }
}
