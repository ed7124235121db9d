//! The journal: one SQLite file per study (Optuna's storage seam). It holds the whole
//! command (so `--resume` needs only the file), the seed, and every trial — written when the
//! trial begins (`pending`) and again when it ends (`finished` with its summary and the full
//! `RunResult` of each level, or `failed` with the error). WAL with `synchronous=FULL`: each
//! write is durable when the call returns, so a SIGKILL loses at most the trial in flight,
//! which the next open reports as `lost`. One process at a time writes a journal: `create`
//! and `open` take its lock (`lock`), so a second tune or `--resume` is refused with the
//! holder's pid; `peek` reads it without the lock and without writing. An interleaved proof
//! is one comparison, not trials: its whole report (every block) is kept in `proofs`
//! when it ends (`record_proof`), and a `--resume` of the same default and winner reuses it.
//! An interleaved search keeps each trial's pair against the incumbent and its blocks
//! (`search_pairs`).

use crate::lock::{JournalLock, LockError};
use crate::objective::LevelSummary;
use crate::space::Config;
use crate::study::{Outcome, Study, Why};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use webtune_model::RunResult;

mod search_pairs;

/// Version of the journal's tables.
pub const JOURNAL_VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Sql {
        path: String,
        source: rusqlite::Error,
    },
    #[error(
        "journal {0} already holds a study: continue it with --resume, or choose another file"
    )]
    Exists(String),
    #[error("journal {0} holds no study (not a webtune journal?)")]
    NoStudy(String),
    #[error("journal {path} is version {found}; this webtune reads version {JOURNAL_VERSION}")]
    Version { path: String, found: i64 },
    #[error("journal {path}: trial {id} is damaged: {why}")]
    Damaged { path: String, id: i64, why: String },
    #[error("journal {path} is in use by {}: one tune at a time writes a journal; wait for it to end or stop it", holder.map_or("another process".to_string(), |p| format!("webtune pid {p}")))]
    Locked { path: String, holder: Option<u32> },
    #[error("journal {path}: cannot take its lock {lock}: {source}")]
    Lock {
        path: String,
        lock: String,
        source: std::io::Error,
    },
}

/// Which part of the command a trial belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Search,
    Proof,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Search => "search",
            Phase::Proof => "proof",
        }
    }
}

/// A trial read back from the journal.
#[derive(Debug, Clone, PartialEq)]
pub struct JournaledTrial {
    pub id: i64,
    pub phase: Phase,
    pub config: Config,
    /// The study's reason (`baseline`, `race`, …) or the proof's arm (`A`, `B`).
    pub why: String,
    pub outcome: Outcome,
    /// How long it took, from `begin_trial` to its end (the stack's start and stop, the
    /// load at every level), in seconds.
    pub seconds: f64,
    /// The rules behind a seed (`tune --from-advice`: the advisor's findings); empty for
    /// other trials and in journals written before the column existed.
    pub rules: Vec<String>,
    /// Its share of the full duration: 1 for a full run (and in journals written before the
    /// column existed), less for a screening run of successive halving (`tune --budget`).
    pub fidelity: f64,
    /// The load's duration at each level, in seconds, when the journal has it.
    pub duration_s: Option<f64>,
}

/// What `Journal::open` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    /// The command as the caller stored it (JSON text).
    pub command: String,
    pub seed: u64,
    /// Finished and failed trials, in the order they began.
    pub trials: Vec<JournaledTrial>,
    /// Trials that began and never ended (the process died): ids and configurations. They
    /// are marked `lost` and never counted.
    pub lost: Vec<(i64, Config)>,
    /// Written before trials kept their rules (`tune --from-advice`): its study had no
    /// advised seed, and a resume must not add one.
    pub before_advice: bool,
    /// An interleaved search's pairs against the incumbent, by trial id (`search_pairs`;
    /// rows of trials that never finished included: the caller keys them by its trials).
    pub search_pairs: Vec<(i64, crate::interleave::search::PairedTrial)>,
}

impl Resumed {
    /// Seconds the journaled trials took, of one phase or (None) of both.
    pub fn seconds(&self, phase: Option<Phase>) -> f64 {
        self.trials
            .iter()
            .filter(|t| phase.is_none_or(|p| t.phase == p))
            .map(|t| t.seconds)
            .sum()
    }

    /// Feed the search trials to a fresh study built from the same command and seed; it then
    /// asks for what the uninterrupted study would have asked for.
    pub fn replay_into(&self, study: &mut Study) {
        for t in self.trials.iter().filter(|t| t.phase == Phase::Search) {
            let why = Why::parse(&t.why).unwrap_or(Why::Model);
            study.record_at(t.config.clone(), why, t.outcome.clone(), t.fidelity);
        }
    }
}

pub struct Journal {
    conn: Connection,
    path: String,
    /// Held while the journal is open for writing; dropped after the connection.
    _lock: Option<JournalLock>,
}

fn lock(path: &Path) -> Result<JournalLock, JournalError> {
    JournalLock::acquire(path).map_err(|e| match e {
        LockError::Held(holder) => JournalError::Locked {
            path: path.display().to_string(),
            holder,
        },
        LockError::Io(source) => JournalError::Lock {
            path: path.display().to_string(),
            lock: crate::lock::lock_path(path).display().to_string(),
            source,
        },
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Journal {
    fn connect(path: &Path, lock: Option<JournalLock>) -> Result<Journal, JournalError> {
        let name = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| JournalError::Sql {
            path: name.clone(),
            source,
        })?;
        let j = Journal {
            conn,
            path: name,
            _lock: lock,
        };
        j.sql(j.conn.pragma_update(None, "journal_mode", "WAL"))?;
        j.sql(j.conn.pragma_update(None, "synchronous", "FULL"))?;
        j.sql(j.conn.busy_timeout(std::time::Duration::from_secs(5)))?;
        Ok(j)
    }

    fn sql<T>(&self, r: rusqlite::Result<T>) -> Result<T, JournalError> {
        r.map_err(|source| JournalError::Sql {
            path: self.path.clone(),
            source,
        })
    }

    /// Start a new journal for a study. Refuses a file that already holds one, or that
    /// another process holds.
    pub fn create(path: &Path, command_json: &str, seed: u64) -> Result<Journal, JournalError> {
        let lock = lock(path)?;
        let j = Journal::connect(path, Some(lock))?;
        j.sql(j.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS study (
                 id INTEGER PRIMARY KEY CHECK (id = 1),
                 version INTEGER NOT NULL,
                 command TEXT NOT NULL,
                 seed TEXT NOT NULL,
                 created_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS trials (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 phase TEXT NOT NULL,
                 config TEXT NOT NULL,
                 why TEXT NOT NULL,
                 state TEXT NOT NULL,
                 summary TEXT,
                 runs TEXT,
                 error TEXT,
                 started_ms INTEGER NOT NULL,
                 ended_ms INTEGER);",
        ))?;
        j.add_columns()?;
        let exists: Option<i64> = j.sql(
            j.conn
                .query_row("SELECT id FROM study", [], |r| r.get(0))
                .optional(),
        )?;
        if exists.is_some() {
            return Err(JournalError::Exists(j.path.clone()));
        }
        j.sql(j.conn.execute(
            "INSERT INTO study (id, version, command, seed, created_ms) VALUES (1, ?1, ?2, ?3, ?4)",
            params![JOURNAL_VERSION, command_json, seed.to_string(), now_ms()],
        ))?;
        Ok(j)
    }

    /// Open an existing journal to continue it: its lock (refused while another process
    /// holds it), the command, the finished trials, and the lost ones (which are marked
    /// `lost` from now on).
    pub fn open(path: &Path) -> Result<(Journal, Resumed), JournalError> {
        if !path.exists() {
            return Err(JournalError::NoStudy(path.display().to_string()));
        }
        let lock = lock(path)?;
        let j = Journal::connect(path, Some(lock))?;
        let resumed = j.read()?;
        j.add_columns()?;
        for (id, _) in &resumed.lost {
            j.sql(j.conn.execute(
                "UPDATE trials SET state = 'lost' WHERE id = ?1",
                params![id],
            ))?;
        }
        Ok((j, resumed))
    }

    /// Read a journal without its lock and without writing to it (`--show`, also while a
    /// tune runs): its trials, and the pid of the process that holds it now, if any (then
    /// `lost` are the trials it is running, not lost ones).
    pub fn peek(path: &Path) -> Result<(Resumed, Option<u32>), JournalError> {
        if !path.exists() {
            return Err(JournalError::NoStudy(path.display().to_string()));
        }
        let holder = JournalLock::holder(path);
        let j = Journal::connect(path, None)?;
        Ok((j.read()?, holder))
    }

    /// Replace the stored command (a `--resume` that was given more trials records them).
    pub fn set_command(&mut self, command_json: &str) -> Result<(), JournalError> {
        self.sql(self.conn.execute(
            "UPDATE study SET command = ?1 WHERE id = 1",
            params![command_json],
        ))?;
        Ok(())
    }

    /// The columns added after version 1's tables, and their SQL types. A journal written
    /// before one existed gains it when it is opened for writing; a reader selects NULL
    /// for one it lacks, so old journals resume and read as before.
    const ADDED: [(&'static str, &'static str); 3] = [
        ("rules", "TEXT"),
        ("fidelity", "REAL"),
        ("duration_s", "REAL"),
    ];

    fn columns(&self) -> Result<Vec<String>, JournalError> {
        let mut stmt = self.sql(
            self.conn
                .prepare("SELECT name FROM pragma_table_info('trials')"),
        )?;
        let names = self.sql(stmt.query_map([], |r| r.get::<_, String>(0)))?;
        self.sql(names.collect::<Result<Vec<_>, _>>())
    }

    /// The tables added after version 1's (an old journal gains them when it is opened for
    /// writing; a reader finds none in one that lacks them).
    fn add_tables(&self) -> Result<(), JournalError> {
        self.sql(self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS proofs (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 protocol TEXT NOT NULL,
                 default_config TEXT NOT NULL,
                 winner_config TEXT NOT NULL,
                 report TEXT NOT NULL,
                 ended_ms INTEGER NOT NULL);",
        ))?;
        self.add_search_tables()
    }

    /// Keep a finished proof of `protocol` ("interleaved") between `default` and `winner`:
    /// its whole report as JSON (for the interleaved one, `webtune.compare-live/1` with every
    /// block).
    pub fn record_proof(
        &mut self,
        protocol: &str,
        (default, winner): (&Config, &Config),
        report_json: &str,
    ) -> Result<(), JournalError> {
        let config = |c: &Config| serde_json::to_string(c).unwrap_or_else(|_| "{}".into());
        self.sql(self.conn.execute(
            "INSERT INTO proofs (protocol, default_config, winner_config, report, ended_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                protocol,
                config(default),
                config(winner),
                report_json,
                now_ms()
            ],
        ))?;
        Ok(())
    }

    /// The last finished proof of `protocol` between exactly `default` and `winner`, as
    /// `record_proof` kept it; None when there is none (or the journal predates proofs).
    pub fn recorded_proof(
        &self,
        protocol: &str,
        (default, winner): (&Config, &Config),
    ) -> Result<Option<String>, JournalError> {
        let exists: Option<String> = self.sql(
            self.conn
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'proofs'",
                    [],
                    |r| r.get(0),
                )
                .optional(),
        )?;
        if exists.is_none() {
            return Ok(None);
        }
        let config = |c: &Config| serde_json::to_string(c).unwrap_or_else(|_| "{}".into());
        self.sql(
            self.conn
                .query_row(
                    "SELECT report FROM proofs WHERE protocol = ?1 AND default_config = ?2 \
                     AND winner_config = ?3 ORDER BY id DESC LIMIT 1",
                    params![protocol, config(default), config(winner)],
                    |r| r.get(0),
                )
                .optional(),
        )
    }

    fn add_columns(&self) -> Result<(), JournalError> {
        self.add_tables()?;
        let have = self.columns()?;
        for (name, kind) in Self::ADDED {
            if !have.iter().any(|c| c == name) {
                self.sql(
                    self.conn
                        .execute(&format!("ALTER TABLE trials ADD COLUMN {name} {kind}"), []),
                )?;
            }
        }
        Ok(())
    }

    /// `name`, or NULL when this journal predates the column.
    fn column_or_null(have: &[String], name: &str) -> String {
        if have.iter().any(|c| c == name) {
            name.to_string()
        } else {
            format!("NULL AS {name}")
        }
    }

    fn read(&self) -> Result<Resumed, JournalError> {
        let j = self;
        let study: Option<(i64, String, String)> = j
            .conn
            .query_row("SELECT version, command, seed FROM study", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .unwrap_or(None);
        let (version, command, seed) =
            study.ok_or_else(|| JournalError::NoStudy(j.path.clone()))?;
        if version != JOURNAL_VERSION {
            return Err(JournalError::Version {
                path: j.path.clone(),
                found: version,
            });
        }
        let seed: u64 = seed
            .parse()
            .map_err(|_| JournalError::NoStudy(j.path.clone()))?;
        type Row = (
            i64,
            String,
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            i64,
            Option<i64>,
            Option<String>,
            Option<f64>,
            Option<f64>,
        );
        let have = j.columns()?;
        let rows: Vec<Row> = {
            let mut stmt = j.sql(j.conn.prepare(&format!(
                "SELECT id, phase, config, why, state, summary, error, started_ms, ended_ms, {}, {}, {} \
                 FROM trials ORDER BY id",
                Self::column_or_null(&have, "rules"),
                Self::column_or_null(&have, "fidelity"),
                Self::column_or_null(&have, "duration_s"),
            )))?;
            let rows = j.sql(stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                ))
            }))?;
            j.sql(rows.collect::<Result<Vec<_>, _>>())?
        };
        let mut trials = Vec::new();
        let mut lost = Vec::new();
        for row in rows {
            let (id, phase, config, why, state, summary, error, started, ended, rules) = (
                row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9,
            );
            let (fidelity, duration_s) = (row.10, row.11);
            let damaged = |why: String| JournalError::Damaged {
                path: j.path.clone(),
                id,
                why,
            };
            let config: Config =
                serde_json::from_str(&config).map_err(|e| damaged(format!("config: {e}")))?;
            let phase = if phase == "proof" {
                Phase::Proof
            } else {
                Phase::Search
            };
            let outcome = match state.as_str() {
                "finished" => {
                    let levels: Vec<LevelSummary> =
                        serde_json::from_str(summary.as_deref().unwrap_or(""))
                            .map_err(|e| damaged(format!("summary: {e}")))?;
                    Outcome::Measured(levels)
                }
                "failed" => Outcome::Failed(error.unwrap_or_default()),
                "pending" => {
                    lost.push((id, config));
                    continue;
                }
                _ => continue,
            };
            trials.push(JournaledTrial {
                id,
                phase,
                config,
                why,
                outcome,
                seconds: ended.map_or(0.0, |e| (e - started).max(0) as f64 / 1000.0),
                rules: match rules.as_deref() {
                    None | Some("") => Vec::new(),
                    Some(text) => {
                        serde_json::from_str(text).map_err(|e| damaged(format!("rules: {e}")))?
                    }
                },
                fidelity: fidelity.filter(|f| *f > 0.0 && *f <= 1.0).unwrap_or(1.0),
                duration_s,
            });
        }
        Ok(Resumed {
            command,
            seed,
            trials,
            lost,
            before_advice: !have.iter().any(|c| c == "rules"),
            search_pairs: self.search_pairs()?,
        })
    }

    /// Record that a trial is about to run; returns its id.
    pub fn begin_trial(
        &mut self,
        phase: Phase,
        config: &Config,
        why: &str,
    ) -> Result<i64, JournalError> {
        self.begin_trial_with(phase, config, why, &[])
    }

    /// `begin_trial`, with the rules behind a seed (the advisor's findings).
    pub fn begin_trial_with(
        &mut self,
        phase: Phase,
        config: &Config,
        why: &str,
        rules: &[String],
    ) -> Result<i64, JournalError> {
        let config = serde_json::to_string(config).unwrap_or_else(|_| "{}".into());
        let rules = (!rules.is_empty())
            .then(|| serde_json::to_string(rules).unwrap_or_else(|_| "[]".into()));
        self.sql(self.conn.execute(
            "INSERT INTO trials (phase, config, why, state, started_ms, rules) \
             VALUES (?1, ?2, ?3, 'pending', ?4, ?5)",
            params![phase.as_str(), config, why, now_ms(), rules],
        ))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Record the share of the full duration a trial runs (a screening run of successive
    /// halving), and its load's duration in seconds.
    pub fn set_fidelity(
        &mut self,
        id: i64,
        fidelity: f64,
        duration_s: f64,
    ) -> Result<(), JournalError> {
        self.sql(self.conn.execute(
            "UPDATE trials SET fidelity = ?2, duration_s = ?3 WHERE id = ?1",
            params![id, fidelity, duration_s],
        ))?;
        Ok(())
    }

    /// Record a measured trial: its summary per level and the full result of each level.
    pub fn finish_trial(
        &mut self,
        id: i64,
        levels: &[LevelSummary],
        runs: &[RunResult],
    ) -> Result<(), JournalError> {
        let summary = serde_json::to_string(levels).unwrap_or_else(|_| "[]".into());
        let runs = serde_json::to_string(runs).unwrap_or_else(|_| "[]".into());
        self.sql(self.conn.execute(
            "UPDATE trials SET state = 'finished', summary = ?2, runs = ?3, ended_ms = ?4 WHERE id = ?1",
            params![id, summary, runs, now_ms()],
        ))?;
        Ok(())
    }

    /// Record a trial that could not be measured.
    pub fn fail_trial(&mut self, id: i64, error: &str) -> Result<(), JournalError> {
        self.sql(self.conn.execute(
            "UPDATE trials SET state = 'failed', error = ?2, ended_ms = ?3 WHERE id = ?1",
            params![id, error, now_ms()],
        ))?;
        Ok(())
    }

    /// The full results stored with a finished trial.
    pub fn runs(&self, id: i64) -> Result<Vec<RunResult>, JournalError> {
        let text: Option<Option<String>> = self.sql(
            self.conn
                .query_row("SELECT runs FROM trials WHERE id = ?1", params![id], |r| {
                    r.get(0)
                })
                .optional(),
        )?;
        match text.flatten() {
            None => Ok(Vec::new()),
            Some(t) => serde_json::from_str(&t).map_err(|e| JournalError::Damaged {
                path: self.path.clone(),
                id,
                why: format!("runs: {e}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::{Objective, Slo};
    use crate::study::{Next, StudySettings};
    use crate::{synthetic, GpSampler};
    use webtune_model::rng::Rng;

    fn study(seed: u64) -> Study {
        let sp = synthetic::space();
        let seeds = synthetic::seeds(&sp);
        Study::new(
            sp,
            Objective::MaximizeThroughput,
            vec![Slo::parse(synthetic::SLO).unwrap()],
            seeds,
            StudySettings {
                seed,
                trials: 12,
                ..StudySettings::default()
            },
            Box::new(GpSampler::default()),
        )
    }

    #[test]
    fn a_killed_study_resumes_where_it_stopped_and_asks_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.db");
        let mut noise = Rng::seeded(99);
        // The uninterrupted study, for reference.
        let mut reference = study(5);
        let mut asked = Vec::new();
        while let Next::Measure(c, why) = reference.next() {
            let o = synthetic::measure(&c, &mut noise);
            asked.push((c.clone(), why, o.clone()));
            reference.record(c, why, o);
        }
        // The same study journaled, "killed" after 8 trials with the 9th in flight.
        {
            let mut j = Journal::create(&path, r#"{"argv":["tune"]}"#, 5).unwrap();
            let mut s = study(5);
            for (c, why, o) in &asked[..8] {
                assert_eq!(s.next(), Next::Measure(c.clone(), *why));
                let id = j.begin_trial(Phase::Search, c, why.as_str()).unwrap();
                let Outcome::Measured(levels) = o else {
                    unreachable!()
                };
                j.finish_trial(id, levels, &[]).unwrap();
                s.record(c.clone(), *why, o.clone());
            }
            j.begin_trial(Phase::Search, &asked[8].0, "model").unwrap();
            // Dropped here without finishing: as after SIGKILL.
        }
        assert!(matches!(
            Journal::create(&path, "{}", 1),
            Err(JournalError::Exists(_))
        ));
        let (j, resumed) = Journal::open(&path).unwrap();
        assert_eq!(resumed.command, r#"{"argv":["tune"]}"#);
        assert_eq!(resumed.seed, 5);
        assert_eq!(resumed.trials.len(), 8);
        assert_eq!(resumed.lost.len(), 1);
        let mut s = study(resumed.seed);
        resumed.replay_into(&mut s);
        // The rebuilt study asks for exactly what the uninterrupted one did next.
        for (c, why, o) in &asked[8..] {
            assert_eq!(s.next(), Next::Measure(c.clone(), *why));
            s.record(c.clone(), *why, o.clone());
        }
        assert_eq!(s.next(), Next::Done);
        assert_eq!(s.best(), reference.best());
        // Lost trials are reported once, then stay lost.
        drop(j);
        let (_j, again) = Journal::open(&path).unwrap();
        assert!(again.lost.is_empty());
    }

    #[test]
    fn a_finished_proof_is_kept_for_its_default_and_winner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.db");
        let mut j = Journal::create(&path, "{}", 0).unwrap();
        let default = synthetic::space().default_config();
        let mut winner = default.clone();
        winner.insert("workers".into(), crate::space::Value::Int(7));
        assert_eq!(
            j.recorded_proof("interleaved", (&default, &winner))
                .unwrap(),
            None
        );
        j.record_proof("interleaved", (&default, &winner), "{\"blocks\":[1,2]}")
            .unwrap();
        drop(j);
        let (j, _) = Journal::open(&path).unwrap();
        assert_eq!(
            j.recorded_proof("interleaved", (&default, &winner))
                .unwrap()
                .as_deref(),
            Some("{\"blocks\":[1,2]}")
        );
        // Another winner, or the arms the other way round, is another proof.
        assert_eq!(
            j.recorded_proof("interleaved", (&winner, &default))
                .unwrap(),
            None
        );
        assert_eq!(
            j.recorded_proof("sequential", (&default, &winner)).unwrap(),
            None
        );
    }

    #[test]
    fn failures_and_full_results_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.db");
        let mut j = Journal::create(&path, "{}", 0).unwrap();
        let c = synthetic::space().default_config();
        let id = j.begin_trial(Phase::Search, &c, "baseline").unwrap();
        j.fail_trial(id, "nginx did not start").unwrap();
        let id2 = j.begin_trial(Phase::Proof, &c, "A").unwrap();
        let run: RunResult =
            serde_json::from_str(&serde_json::to_string(&sample_run()).unwrap()).unwrap();
        j.finish_trial(id2, &[], std::slice::from_ref(&run))
            .unwrap();
        drop(j);
        let (j, r) = Journal::open(&path).unwrap();
        assert_eq!(
            r.trials[0].outcome,
            Outcome::Failed("nginx did not start".into())
        );
        assert_eq!(r.trials[1].phase, Phase::Proof);
        assert_eq!(j.runs(id2).unwrap(), vec![run]);
        assert!(matches!(
            Journal::open(&dir.path().join("missing.db")),
            Err(JournalError::NoStudy(_))
        ));
    }

    #[test]
    fn one_writer_at_a_time_and_peek_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.db");
        let mut j = Journal::create(&path, "{}", 0).unwrap();
        let c = synthetic::space().default_config();
        j.begin_trial(Phase::Search, &c, "baseline").unwrap();
        // A second tune, or a --resume, while this one runs: refused, naming the holder.
        for second in [
            Journal::open(&path).map(|_| ()),
            Journal::create(&path, "{}", 0).map(|_| ()),
        ] {
            match second {
                Err(e @ JournalError::Locked { .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains(&format!("pid {}", std::process::id())),
                        "{text}"
                    );
                }
                Err(e) => panic!("{e}"),
                Ok(()) => panic!("a second writer was let in"),
            }
        }
        // --show meanwhile: the running trial is seen, not marked lost.
        let (r, holder) = Journal::peek(&path).unwrap();
        assert_eq!(holder, Some(std::process::id()));
        assert_eq!(r.lost.len(), 1);
        drop(j);
        let (r, holder) = Journal::peek(&path).unwrap();
        assert_eq!((r.lost.len(), holder), (1, None));
        let (mut j, r) = Journal::open(&path).expect("free once the first let go");
        assert_eq!(r.lost.len(), 1);
        j.set_command(r#"{"argv":["x"]}"#).unwrap();
        drop(j);
        let (_j, r) = Journal::open(&path).unwrap();
        assert_eq!(r.command, r#"{"argv":["x"]}"#);
        assert!(r.lost.is_empty());
    }

    /// Run by `sigkill_loses_at_most_the_trial_in_flight` in a child process: journals the
    /// synthetic study's trials until killed (or its budget is spent).
    #[test]
    #[ignore = "helper: runs only in the child process of the SIGKILL test"]
    fn journal_writer_child() {
        let Some(path) = std::env::var_os("WEBTUNE_TUNE_CHILD_JOURNAL") else {
            return;
        };
        let path = std::path::PathBuf::from(path);
        let mut j = Journal::create(&path, "{}", 11).unwrap();
        let mut s = study(11);
        let mut noise = Rng::seeded(1);
        s.settings.trials = 200;
        while let Next::Measure(c, why) = s.next() {
            let id = j.begin_trial(Phase::Search, &c, why.as_str()).unwrap();
            let o = synthetic::measure(&c, &mut noise);
            let Outcome::Measured(levels) = &o else {
                unreachable!()
            };
            j.finish_trial(id, levels, &[]).unwrap();
            s.record(c, why, o);
        }
    }

    #[test]
    fn sigkill_loses_at_most_the_trial_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("killed.db");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "journal::tests::journal_writer_child",
                "--ignored",
                "--nocapture",
            ])
            .env("WEBTUNE_TUNE_CHILD_JOURNAL", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait (bounded) until some trials are finished, then SIGKILL mid-study.
        let mut finished = 0;
        for _ in 0..2000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if let Ok(c) = Connection::open(&path) {
                finished = c
                    .query_row(
                        "SELECT count(*) FROM trials WHERE state = 'finished'",
                        [],
                        |r| r.get::<_, i64>(0),
                    )
                    .unwrap_or(0);
                if finished >= 12 {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        assert!(finished >= 12, "the child journaled only {finished} trials");
        let (_j, r) = Journal::open(&path).unwrap();
        assert!(r.lost.len() <= 1, "{:?}", r.lost);
        assert!(r.trials.len() >= 12);
        // Replayed, the study carries on from the lost trial (or the next one).
        let mut s = study(11);
        s.settings.trials = 200;
        r.replay_into(&mut s);
        assert_eq!(s.trials().len(), r.trials.len());
        if let (Next::Measure(c, _), Some((_, lost))) = (s.next(), r.lost.first()) {
            assert_eq!(&c, lost);
        }
    }

    #[test]
    fn rules_are_kept_and_a_journal_from_before_them_still_reads_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let c = synthetic::space().default_config();
        // A journal as version 1 wrote it before the `rules` column.
        let old = dir.path().join("old.db");
        {
            let conn = Connection::open(&old).unwrap();
            conn.execute_batch(
                "CREATE TABLE study (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL,
                     command TEXT NOT NULL, seed TEXT NOT NULL, created_ms INTEGER NOT NULL);
                 CREATE TABLE trials (id INTEGER PRIMARY KEY AUTOINCREMENT, phase TEXT NOT NULL,
                     config TEXT NOT NULL, why TEXT NOT NULL, state TEXT NOT NULL, summary TEXT,
                     runs TEXT, error TEXT, started_ms INTEGER NOT NULL, ended_ms INTEGER);
                 INSERT INTO study VALUES (1, 1, '{}', '3', 0);",
            )
            .unwrap();
            conn.execute(
                "INSERT INTO trials (phase, config, why, state, summary, started_ms, ended_ms) \
                 VALUES ('search', ?1, 'baseline', 'finished', '[]', 0, 1500)",
                params![serde_json::to_string(&c).unwrap()],
            )
            .unwrap();
        }
        let (peeked, _) = Journal::peek(&old).unwrap();
        assert!(peeked.before_advice);
        assert_eq!(peeked.trials.len(), 1);
        assert!(peeked.trials[0].rules.is_empty());
        let (mut j, r) = Journal::open(&old).expect("an old journal resumes");
        assert!(r.before_advice);
        assert_eq!((r.seed, r.trials.len()), (3, 1));
        assert_eq!(r.trials[0].seconds, 1.5);
        let rules = vec!["proxy-backend-workers".to_string(), "memory".into()];
        let id = j
            .begin_trial_with(Phase::Search, &c, "seed", &rules)
            .unwrap();
        j.finish_trial(id, &[], &[]).unwrap();
        drop(j);
        let (_j, r) = Journal::open(&old).unwrap();
        assert_eq!(r.trials[1].rules, rules);
        assert_eq!(r.trials[1].why, "seed");
        assert_eq!((r.trials[1].fidelity, r.trials[1].duration_s), (1.0, None));
        // A new journal keeps them too.
        let new = dir.path().join("new.db");
        let mut j = Journal::create(&new, "{}", 0).unwrap();
        let id = j
            .begin_trial_with(Phase::Search, &c, "seed", &rules[..1])
            .unwrap();
        j.fail_trial(id, "did not start").unwrap();
        // A screening run of successive halving keeps its fidelity, and the study replayed
        // from the journal gets it back.
        let id = j.begin_trial(Phase::Search, &c, "model").unwrap();
        j.set_fidelity(id, 0.25, 2.5).unwrap();
        j.finish_trial(id, &[], &[]).unwrap();
        drop(j);
        let (r, _) = Journal::peek(&new).unwrap();
        assert_eq!(r.trials[0].rules, rules[..1]);
        assert_eq!(r.trials[0].fidelity, 1.0);
        assert_eq!(
            (r.trials[1].fidelity, r.trials[1].duration_s),
            (0.25, Some(2.5))
        );
        let mut s = study(0);
        r.replay_into(&mut s);
        assert_eq!(s.trials()[1].fidelity, 0.25);
    }

    fn sample_run() -> serde_json::Value {
        serde_json::from_str(include_str!("../testdata/run.json")).unwrap()
    }
}
