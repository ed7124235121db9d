//! A tune as a value: `TuneRequest` holds everything `webtune tune` is asked (the subject,
//! the goal, the search's size, the proof, the hooks of `tune external`, the load already
//! resolved from its flags) with its defaults in one place (`Default`, and the constants
//! the command line's defaults refer to). `TuneRequest::job` decides what a tune does with
//! it — trial counts, the postfix-only `delivered` rule, the advice-seeding fallback, the
//! capacity override, the path a lab stack loads — and turns it into a `Job`. The journal
//! stores the request (serde; `resume` reads it back), never the command-line words.
//!
//! Idea from ripgrep's `SearcherBuilder` (defaults in the library, the CLI only maps flags)
//! and Optuna's storages (a study resumes from its storage alone). `job` is what a request
//! becomes.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use webtune_lab::forum::data;
use webtune_model::fs::FsSpec;
use webtune_model::RunSpec;

pub mod checks;
mod job;

/// Measured runs in a search without `--trials`.
pub const DEFAULT_TRIALS: usize = 15;
/// … and under a `--budget` of time, where the time decides.
pub const DEFAULT_TRIALS_UNDER_BUDGET: usize = 200;
/// Pairs of the sequential proof without `--confirm`.
pub const DEFAULT_CONFIRM: usize = 5;
/// How the search measures without `--search-protocol`, where the subject allows both:
/// interleaved, since it measured no slower than sequential trials in the tests' short
/// tunes and cancels the noise both arms meet (docs/tuning.md).
pub const DEFAULT_SEARCH: &str = "interleaved";
/// The proof's budget, `--apply-timeout` and `--sample-interval` as the command line writes
/// them: named in the model, where the grammar (`webtune-cli`) reads them too.
pub use webtune_model::defaults::{
    DEFAULT_APPLY_TIMEOUT, DEFAULT_PROOF_BUDGET, DEFAULT_SAMPLE_INTERVAL,
};

/// The trials a search may run without --trials: 15, or 200 under a --budget of time.
pub fn default_trials(budget: bool) -> usize {
    if budget {
        DEFAULT_TRIALS_UNDER_BUDGET
    } else {
        DEFAULT_TRIALS
    }
}

/// What a lab stack serves (the lab's; a journal writes it "site" or "forum").
pub use webtune_lab::trial::App;

/// The load of every trial, resolved from the flags after `--` by the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// HTTP load (bench flags): the spec with an empty URL (the subject decides it), what
    /// was given as the URL or path, the scenario file, and `-c` when given (`--maximize
    /// capacity` caps the open loop with it). The spec's body is not serialised: `body`
    /// (`--body`) or `body_file` (`--body-file`, read again when the job is built, in the
    /// tune's directory) give it back.
    Http {
        spec: RunSpec,
        url: Option<String>,
        scenario: Option<PathBuf>,
        connections: Option<u32>,
        #[serde(default)]
        body: Option<String>,
        #[serde(default)]
        body_file: Option<PathBuf>,
    },
    /// A mail stack's load (`webtune smtp`'s flags; the stack's own mailboxes).
    Mail { spec: RunSpec },
    /// The fs workload (`webtune fs`'s flags), checked.
    Fs { spec: FsSpec },
}

impl Default for Load {
    fn default() -> Load {
        Load::Http {
            spec: RunSpec::default(),
            url: None,
            scenario: None,
            connections: None,
            body: None,
            body_file: None,
        }
    }
}

/// Where the report goes (the invocation's `--json`, `--html`, `-q`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTo {
    pub json: Option<String>,
    pub html: Option<String>,
    pub quiet: bool,
}

/// Everything a tune is asked. Field names are the command line's argument ids, so a
/// resume can compare a flag given again with the stored request by name (`amend`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TuneRequest {
    /// A lab stack, `fs`, `postfix` or `external`.
    pub stack: Option<String>,
    /// `--param` texts (empty: the subject's default space).
    pub params: Vec<String>,
    /// `--set NAME=VALUE`: kept by every trial.
    pub set: Vec<String>,
    pub app: App,
    /// The forum's size and seed (`--app forum`).
    pub posts: u64,
    pub seed: u64,
    pub maximize: Option<String>,
    pub minimize: Option<String>,
    pub slos: Vec<String>,
    pub levels: Vec<f64>,
    /// `--trials` (None: `default_trials`).
    pub trials: Option<usize>,
    /// `--budget`: wall time of the search.
    pub budget: Option<Duration>,
    pub from_advice: bool,
    pub no_from_advice: bool,
    /// `--confirm` (None: `DEFAULT_CONFIRM`, and the interleaved proof on a lab stack).
    pub confirm: Option<usize>,
    /// `interleaved` or `sequential` (None: by subject and `--confirm`).
    pub protocol: Option<String>,
    pub proof_budget: Duration,
    /// `--search-protocol`: `interleaved` (each candidate against the incumbent, two
    /// stacks at once) or `sequential` (each candidate alone). None: `DEFAULT_SEARCH`
    /// where the subject allows it, else sequential.
    pub search_protocol: Option<String>,
    pub apply: Option<String>,
    pub restore: Option<String>,
    pub apply_timeout: Duration,
    pub baseline: Option<String>,
    pub processes: Vec<String>,
    pub search_seed: u64,
    pub sample_interval: Duration,
    pub host_sysctl: bool,
    /// The flags after `--` as they were written: what a resume compares, and what
    /// messages quote. The trials use `load`, never these words.
    pub bench: Vec<String>,
    pub load: Load,
    pub report: ReportTo,
    /// Where the journal is (None: a temporary one, removed at the end).
    pub journal: Option<PathBuf>,
    /// The directory the tune ran in: a resume runs there, so relative paths keep meaning.
    pub cwd: Option<PathBuf>,
}

impl Default for TuneRequest {
    fn default() -> TuneRequest {
        let duration = |text| webtune_model::parse_duration(text).expect("a default duration");
        TuneRequest {
            stack: None,
            params: Vec::new(),
            set: Vec::new(),
            app: App::Site,
            posts: data::SEED_003_POSTS,
            seed: data::DEFAULT_SEED,
            maximize: None,
            minimize: None,
            slos: Vec::new(),
            levels: Vec::new(),
            trials: None,
            budget: None,
            from_advice: false,
            no_from_advice: false,
            confirm: None,
            protocol: None,
            proof_budget: duration(DEFAULT_PROOF_BUDGET),
            search_protocol: None,
            apply: None,
            restore: None,
            apply_timeout: duration(DEFAULT_APPLY_TIMEOUT),
            baseline: None,
            processes: Vec::new(),
            search_seed: 0,
            sample_interval: duration(DEFAULT_SAMPLE_INTERVAL),
            host_sysctl: false,
            bench: Vec::new(),
            load: Load::default(),
            report: ReportTo::default(),
            journal: None,
            cwd: None,
        }
    }
}

impl TuneRequest {
    /// `--confirm`: the sequential proof's pairs (5 unless given; 0 skips any proof).
    pub fn confirm(&self) -> usize {
        self.confirm.unwrap_or(DEFAULT_CONFIRM)
    }

    /// `--trials`, or its default.
    pub fn trials(&self) -> usize {
        self.trials
            .unwrap_or_else(|| default_trials(self.budget.is_some()))
    }

    /// The stack's name, or the one-line error that asks for it.
    pub fn stack_name(&self) -> anyhow::Result<&str> {
        self.stack
            .as_deref()
            .context("name the stack to tune (webtune lab stacks), or external")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_documented_ones_and_a_request_round_trips() {
        let r = TuneRequest::default();
        assert_eq!((r.trials(), r.confirm()), (15, 5));
        let under_budget = TuneRequest {
            budget: Some(Duration::from_secs(600)),
            ..TuneRequest::default()
        };
        assert_eq!(under_budget.trials(), 200);
        assert_eq!(r.proof_budget, Duration::from_secs(180));
        assert_eq!(r.apply_timeout, Duration::from_secs(600));
        assert_eq!(r.sample_interval, Duration::from_millis(250));
        let text = serde_json::to_string(&under_budget).unwrap();
        let back: TuneRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, under_budget);
        // Fields a later version adds read as their defaults from an older request.
        let old: TuneRequest = serde_json::from_str(r#"{"stack":"nginx"}"#).unwrap();
        assert_eq!(old.stack.as_deref(), Some("nginx"));
        assert_eq!(old.trials(), 15);
    }
}
