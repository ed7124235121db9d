//! What a `TuneRequest` becomes: `TuneRequest::job` makes every decision before anything
//! runs (the goal and its rules, trial counts, the postfix-only `delivered`, the path a lab
//! stack loads, the forum's dataset, the advice seed or why there is none, the capacity
//! override, the proof protocol) and builds the `Job` the driver runs.

use super::checks;
use super::{App, Load, TuneRequest};
use crate::driver;
use crate::job::{Job, ProofProtocol, SearchProtocol};
use crate::subject::{external_catalogue, Subject};
use anyhow::{bail, Context};
use webtune_engine::Workload;
use webtune_lab::trial::path::{default_path, load_path, Served};
use webtune_lab::trial::Level;
use webtune_lab::StackKind;
use webtune_model::RunSpec;
use webtune_search::objective::Objective;
use webtune_search::space::Space;
use webtune_search::study::StudySettings;

impl TuneRequest {
    /// Everything checked and built before anything starts. `progress` hears the steps of
    /// building the forum's dataset (`--app forum`), which can take minutes.
    pub fn job(&self, progress: &mut dyn FnMut(&str)) -> anyhow::Result<Job> {
        let stack_name = self.stack_name()?;
        if let Some(p) = self.search_protocol.as_deref() {
            if p != "interleaved" && p != "sequential" {
                bail!("--search-protocol is interleaved or sequential, not {p:?}");
            }
        }
        let checks::Goal {
            objective,
            slos,
            capacity,
        } = checks::goal(
            self.maximize.as_deref(),
            self.minimize.as_deref(),
            &self.slos,
            !self.levels.is_empty(),
        )?;
        checks::check_trials(self.trials())?;
        if self.budget.is_some_and(|b| b.is_zero()) {
            bail!("--budget must be above zero, e.g. --budget 10m");
        }
        if stack_name == webtune_lab::filesystem::NAME {
            return self.fs_job(objective, slos, capacity.is_some());
        }
        // A served request is what the objective counts: hold errors to 1% unless told.
        let slos = match capacity {
            None => webtune_search::objective::Slo::with_default_errors(slos),
            Some(_) => slos,
        };
        let stack = StackKind::from_name(stack_name)?;
        // The mail stack's load is `webtune smtp`'s flags.
        if objective == Objective::MaximizeDelivered && stack != StackKind::Postfix {
            bail!("--maximize delivered is a mail stack's figure: tune postfix");
        }
        let (http, url, scenario, connections) = match &self.load {
            Load::Http {
                spec,
                url,
                scenario,
                connections,
                body,
                body_file,
            } => (
                Some(with_body(spec, body.as_deref(), body_file.as_deref())?),
                url.clone(),
                scenario.clone(),
                *connections,
            ),
            Load::Mail { .. } => (None, None, None, None),
            Load::Fs { .. } => bail!("tune {stack_name} loads HTTP: the fs workload is tune fs's"),
        };
        let mail_load = match (&self.load, stack) {
            (Load::Mail { spec }, StackKind::Postfix) => Some(spec.clone()),
            (_, StackKind::Postfix) => {
                bail!("tune postfix: give `webtune smtp`'s flags after --")
            }
            (Load::Mail { .. }, _) => bail!("smtp flags are tune postfix's"),
            _ => None,
        };
        let fixed: Vec<(String, String)> = self
            .set
            .iter()
            .map(|a| webtune_lab::parse_assignment(a))
            .collect::<Result<_, _>>()?;
        let workload = match &scenario {
            Some(path) => Workload::from_scenario_file(path).map_err(|e| anyhow::anyhow!("{e}"))?,
            None => Workload::request(),
        };
        let (subject, path) = if stack == StackKind::External {
            checks::check_external(
                self.apply.as_deref(),
                !self.params.is_empty(),
                self.apply_timeout,
            )?;
            let url = url.clone().context(
                "tune external needs the URL after --, e.g. -- -c 64 -d 5s http://127.0.0.1:8080/",
            )?;
            (
                Subject::External {
                    base_url: url,
                    processes: self.processes.clone(),
                    apply: self.apply.clone().unwrap_or_default(),
                    restore: self.restore.clone(),
                    timeout: self.apply_timeout,
                },
                String::new(),
            )
        } else {
            checks::check_lab_stack(
                self.apply.is_some() || self.restore.is_some() || self.baseline.is_some(),
            )?;
            match self.app {
                App::Forum => {
                    checks::check_forum(stack)?;
                    let path = match (&url, workload.scenario()) {
                        (None, None) => String::new(),
                        (given, _) => load_path(given.as_deref(), "")?,
                    };
                    let dataset = webtune_lab::forum::dataset::ensure(
                        self.posts,
                        self.seed,
                        &webtune_lab::forum::DbOptions::database(),
                        progress,
                    )?;
                    (
                        Subject::Forum {
                            kind: stack,
                            fixed: fixed.clone(),
                            dataset: Box::new(dataset),
                        },
                        path,
                    )
                }
                App::Site => (
                    Subject::Stack {
                        kind: stack,
                        fixed: fixed.clone(),
                    },
                    load_path(
                        url.as_deref(),
                        default_path(Served::Stack(stack), &workload),
                    )?,
                ),
            }
        };
        let baseline: Vec<(String, String)> = match &self.baseline {
            Some(text) => text
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    webtune_lab::parse_assignment(p.trim())
                        .map_err(|e| anyhow::anyhow!("--baseline: {e}"))
                })
                .collect::<anyhow::Result<_>>()?,
            None => Vec::new(),
        };
        let cores = webtune_engine::available_cores();
        let texts = if self.params.is_empty() {
            subject.default_params(cores)
        } else {
            self.params.clone()
        };
        let catalogue = match &subject {
            Subject::External { .. } => external_catalogue(&texts, &baseline),
            _ => subject.catalogue(),
        };
        let mut space = Space::parse(&texts, &catalogue)?;
        space.inert = subject.inert_rules(&space);
        if texts.is_empty() || space.params.is_empty() {
            bail!("nothing to tune: give --param NAME=LO..HI");
        }
        checks::check_fixed(&fixed, &space)?;
        let mut seeds = subject.rules_of_thumb(&space, cores);
        let advice = match (&subject, self.no_from_advice || mail_load.is_some()) {
            (Subject::External { .. }, _) => {
                if self.from_advice {
                    bail!("--from-advice reads a lab stack's config: tune external has none (drop it)");
                }
                None
            }
            (_, true) => None,
            // The advisor failing is no reason to stop the tune: it is said in the report.
            (_, false) => Some(
                crate::advice::advice_seeds(&subject, &space).unwrap_or_else(|why| {
                    webtune_search::advised::Advice {
                        seeds: Vec::new(),
                        notes: vec![format!("the advisor did not run: {why}")],
                    }
                }),
            ),
        };
        if let Some(a) = &advice {
            seeds = crate::advice::with_advice(a, seeds);
        }
        let mut load = match (mail_load, http) {
            (Some(spec), _) if capacity.is_none() => spec,
            (Some(_), _) => {
                bail!("tune postfix searches --maximize delivered or throughput, not capacity")
            }
            (None, Some(spec)) => RunSpec { url: path, ..spec },
            (None, None) => unreachable!("a load that is neither mail nor HTTP was refused above"),
        };
        if let Some(c) = &capacity {
            // Every step of every trial: open loop at the search's rate, -c as the cap.
            load.connections = connections.unwrap_or(webtune_model::spec::OPEN_LOOP_CONNECTIONS);
            load.load = webtune_model::LoadMode::Open {
                rate: c.search.start_rps,
                arrival: webtune_model::Arrival::Uniform,
            };
            load.validate()?;
        }
        let levels = levels_of(&self.levels, load.is_open_loop())?;
        let settings = StudySettings {
            trials: self.trials(),
            seed: self.search_seed,
            screen: driver::screening(&load, self.budget.is_some(), capacity.is_some()),
            ..StudySettings::default()
        };
        let mut job = Job {
            subject,
            load,
            workload,
            levels,
            sample_interval: self.sample_interval,
            space,
            objective,
            slos,
            seeds,
            advice,
            settings,
            confirm: self.confirm(),
            protocol: self.proof_protocol(stack == StackKind::External)?,
            search: SearchProtocol::Sequential,
            search_note: None,
            capacity,
            time_budget: self.budget,
        };
        job.search = self.search_protocol(&job)?;
        if self.search_protocol.is_none()
            && super::DEFAULT_SEARCH == "interleaved"
            && job.search == SearchProtocol::Sequential
            && match &job.subject {
                Subject::Stack { kind, .. } => *kind != StackKind::Postfix,
                Subject::Forum { .. } => true,
                _ => false,
            }
        {
            job.search_note = crate::interleaved_search::unavailable(&job);
        }
        Ok(job)
    }

    /// `--search-protocol`: what was asked, checked against what the job can do (two lab
    /// stacks at once, one level, a duration, an objective the pairs decide on); without
    /// it, `DEFAULT_SEARCH` where the job can interleave, else sequential.
    fn search_protocol(&self, job: &Job) -> anyhow::Result<SearchProtocol> {
        let why_not = crate::interleaved_search::unavailable(job);
        let interleaved = match self.search_protocol.as_deref() {
            None => super::DEFAULT_SEARCH == "interleaved" && why_not.is_none(),
            Some("interleaved") => match why_not {
                Some(why) => bail!("--search-protocol interleaved: {why}"),
                None => true,
            },
            // Sequential (any other word was refused at the start of `job`).
            Some(_) => false,
        };
        Ok(if interleaved {
            SearchProtocol::Interleaved(webtune_search::interleave::Settings::new(
                webtune_search::interleave::block::Metric::Throughput,
            ))
        } else {
            SearchProtocol::Sequential
        })
    }

    /// `tune fs`: the lab's file system as the tuned subject. The workload is `webtune
    /// fs`'s; each trial makes a file system with the configuration, runs it and removes it
    /// (`measure::measure_fs`). Latencies and `--slo 'p99<=…'` are the fsync's when the
    /// workload syncs, else the transaction's.
    fn fs_job(
        &self,
        objective: Objective,
        slos: Vec<webtune_search::objective::Slo>,
        capacity: bool,
    ) -> anyhow::Result<Job> {
        if capacity {
            bail!("--maximize capacity is for web stacks; tune fs maximizes throughput (transactions/s) or minimizes a latency");
        }
        if !self.levels.is_empty() {
            bail!("--levels is for web stacks; give tune fs its workload after --, e.g. -- --files 1000 --transactions 20000 -c 1");
        }
        if self.apply.is_some() || self.restore.is_some() || self.baseline.is_some() {
            bail!("--apply, --restore and --baseline are for tune external");
        }
        let Load::Fs { spec } = &self.load else {
            bail!("tune fs: give `webtune fs`'s flags after --");
        };
        let fixed: Vec<(String, String)> = self
            .set
            .iter()
            .map(|a| webtune_lab::parse_assignment(a))
            .collect::<Result<_, _>>()?;
        // The fixed values alone must already be a valid file system.
        webtune_lab::filesystem::settings_for(&self.set, self.host_sysctl)?;
        let subject = Subject::Fs {
            fixed: fixed.clone(),
            spec: Box::new(spec.clone()),
            host_sysctl: self.host_sysctl,
        };
        let texts = if self.params.is_empty() {
            subject.default_params(webtune_engine::available_cores())
        } else {
            self.params.clone()
        };
        let mut space = Space::parse(&texts, &subject.catalogue())?;
        space.inert = subject.inert_rules(&space);
        if space.params.is_empty() {
            bail!("nothing to tune: give --param NAME=LO..HI or NAME=a,b (webtune lab params fs)");
        }
        checks::check_fixed(&fixed, &space)?;
        if self.search_protocol.as_deref() == Some("interleaved") {
            bail!("--search-protocol interleaved: it runs web stacks; tune fs is sequential");
        }
        Ok(Job {
            subject,
            // The HTTP load spec is unused by fs trials; the journal keeps it as the other
            // tunes'.
            load: RunSpec {
                url: "/".into(),
                ..RunSpec::default()
            },
            workload: Workload::request(),
            levels: vec![Level::Connections(spec.workers)],
            sample_interval: self.sample_interval,
            space,
            objective,
            slos,
            seeds: Vec::new(),
            settings: StudySettings {
                trials: self.trials(),
                seed: self.search_seed,
                ..StudySettings::default()
            },
            confirm: self.confirm(),
            protocol: ProofProtocol::Sequential,
            search: SearchProtocol::Sequential,
            search_note: None,
            capacity: None,
            time_budget: self.budget,
            advice: None,
        })
    }

    /// `--protocol` (interleaved by default for a lab stack, sequential otherwise) with the
    /// interleaved proof's settings.
    fn proof_protocol(&self, external: bool) -> anyhow::Result<ProofProtocol> {
        let interleaved = match self.protocol.as_deref() {
            Some("interleaved") if external => {
                bail!("--protocol interleaved needs two servers at once; tune external has one (use sequential)")
            }
            Some(p) => p == "interleaved",
            // `--confirm K` is the sequential proof's own flag: asking for K pairs asks for it.
            None => !external && self.confirm.is_none(),
        };
        if !interleaved {
            return Ok(ProofProtocol::Sequential);
        }
        // Both stacks are restarted within the proof: a start effect is not a winner.
        let s = webtune_search::interleave::Settings::restartable(
            webtune_search::interleave::block::Metric::Throughput,
            self.proof_budget.as_secs_f64(),
        )
        .map_err(|e| anyhow::anyhow!("--proof-budget: {e}"))?;
        Ok(ProofProtocol::Interleaved(s))
    }
}

/// `spec` with the request body it was given (a serialised spec carries none).
fn with_body(
    spec: &RunSpec,
    text: Option<&str>,
    file: Option<&std::path::Path>,
) -> anyhow::Result<RunSpec> {
    let mut spec = spec.clone();
    let body = match (text, file) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("cannot read --body-file {}", path.display()))?,
        (None, None) => return Ok(spec),
    };
    spec.body_bytes = body.len() as u64;
    spec.body = body;
    Ok(spec)
}

fn levels_of(levels: &[f64], open_loop: bool) -> anyhow::Result<Vec<Level>> {
    if levels.is_empty() {
        return Ok(vec![Level::AsSpecified]);
    }
    levels
        .iter()
        .map(|&l| {
            if !(l.is_finite() && l > 0.0) {
                bail!("--levels must be positive numbers, e.g. --levels 8,128,1024");
            }
            Ok(if open_loop {
                Level::Rate(l)
            } else {
                if l.fract() != 0.0 || l > f64::from(u32::MAX) {
                    bail!("--levels are connection counts (whole numbers) without --rate");
                }
                Level::Connections(l as u32)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn what_a_request_cannot_be_is_refused_before_anything_runs() {
        let mut note = |_: &str| {};
        let e = |r: TuneRequest| r.job(&mut |_| {}).err().unwrap().to_string();
        assert!(e(TuneRequest::default()).contains("name the stack"));
        let nginx = |f: fn(&mut TuneRequest)| {
            let mut r = TuneRequest {
                stack: Some("nginx".into()),
                ..TuneRequest::default()
            };
            f(&mut r);
            r
        };
        assert!(e(nginx(|r| r.maximize = Some("delivered".into()))).contains("tune postfix"));
        assert!(e(nginx(|r| r.budget = Some(Duration::ZERO))).contains("--budget"));
        assert!(e(nginx(|r| r.levels = vec![1.5])).contains("whole numbers"));
        assert!(e(nginx(|r| r.search_protocol = Some("both".into())))
            .contains("--search-protocol is interleaved or sequential"));
        assert!(e(nginx(|r| {
            r.search_protocol = Some("interleaved".into());
            r.levels = vec![2.0, 4.0];
        }))
        .contains("one load level"));
        assert!(e(nginx(|r| {
            r.load = Load::Http {
                spec: RunSpec::default(),
                url: Some("http://h/".into()),
                scenario: None,
                connections: None,
                body: None,
                body_file: None,
            }
        }))
        .contains("not a URL"));
        let external = TuneRequest {
            stack: Some("external".into()),
            params: vec!["w=1..4".into()],
            apply: Some("true".into()),
            protocol: Some("interleaved".into()),
            load: Load::Http {
                spec: RunSpec::default(),
                url: Some("http://127.0.0.1:1/".into()),
                scenario: None,
                connections: None,
                body: Some("{\"a\":1}".into()),
                body_file: None,
            },
            ..TuneRequest::default()
        };
        assert!(external
            .job(&mut note)
            .err()
            .unwrap()
            .to_string()
            .contains("--protocol interleaved needs two servers"));
        // The same request, sequential, is a job: the URL is the subject's.
        let job = TuneRequest {
            protocol: None,
            ..external
        }
        .job(&mut note)
        .unwrap();
        assert_eq!(job.protocol, ProofProtocol::Sequential);
        // One server: the search is sequential, and nothing is said about it.
        assert_eq!(
            (&job.search, &job.search_note),
            (&SearchProtocol::Sequential, &None)
        );
        assert_eq!((job.confirm, job.settings.trials), (5, 15));
        assert!(job.load.url.is_empty());
        // The body comes back although a serialised spec has none.
        assert_eq!((job.load.body.len(), job.load.body_bytes), (7, 7));
    }
}
