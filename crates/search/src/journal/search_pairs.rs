//! The journal's record of an interleaved search (`tune --search-protocol interleaved`):
//! per search trial, the pair it ran against the incumbent (`search_pairs`: the
//! `PairedTrial` as JSON) and every block of both arms (`search_blocks`, one row per block
//! with its arm). Both are written in one transaction before the trial is marked finished,
//! so a finished search trial of an interleaved tune always has them, and a resume rebuilds
//! the incumbent from them alone. A row whose trial never finished (killed between the two
//! writes) is ignored by the caller, which keys the rows by the finished trials' ids.

use super::{now_ms, Journal, JournalError};
use crate::interleave::search::PairedTrial;
use crate::interleave::Block;
use rusqlite::{params, OptionalExtension};

impl Journal {
    /// The tables of the interleaved search (created with the others, `add_tables`).
    pub(super) fn add_search_tables(&self) -> Result<(), JournalError> {
        self.sql(self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS search_pairs (
                 trial_id INTEGER PRIMARY KEY,
                 pair TEXT NOT NULL,
                 ended_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS search_blocks (
                 trial_id INTEGER NOT NULL,
                 idx INTEGER NOT NULL,
                 arm TEXT NOT NULL,
                 block TEXT NOT NULL,
                 PRIMARY KEY (trial_id, idx));",
        ))
    }

    fn has_table(&self, name: &str) -> Result<bool, JournalError> {
        let found: Option<String> = self.sql(
            self.conn
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    params![name],
                    |r| r.get(0),
                )
                .optional(),
        )?;
        Ok(found.is_some())
    }

    /// Keep search trial `trial_id`'s pair against the incumbent and every block of both
    /// arms (replacing what an earlier, unfinished run of the same id left).
    pub fn record_search_pair(
        &mut self,
        trial_id: i64,
        pair: &PairedTrial,
        blocks: &[Block],
    ) -> Result<(), JournalError> {
        let path = self.path.clone();
        let sql = |source| JournalError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            "DELETE FROM search_blocks WHERE trial_id = ?1",
            params![trial_id],
        )
        .map_err(sql)?;
        tx.execute(
            "INSERT OR REPLACE INTO search_pairs (trial_id, pair, ended_ms) VALUES (?1, ?2, ?3)",
            params![
                trial_id,
                serde_json::to_string(pair).unwrap_or_else(|_| "{}".into()),
                now_ms()
            ],
        )
        .map_err(sql)?;
        for (i, b) in blocks.iter().enumerate() {
            tx.execute(
                "INSERT INTO search_blocks (trial_id, idx, arm, block) VALUES (?1, ?2, ?3, ?4)",
                params![
                    trial_id,
                    i as i64,
                    b.arm.letter(),
                    serde_json::to_string(b).unwrap_or_else(|_| "{}".into())
                ],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// Every search trial's pair against the incumbent, by trial id (empty for a journal of
    /// a sequential search, or one written before the table existed).
    pub fn search_pairs(&self) -> Result<Vec<(i64, PairedTrial)>, JournalError> {
        if !self.has_table("search_pairs")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.sql(
            self.conn
                .prepare("SELECT trial_id, pair FROM search_pairs ORDER BY trial_id"),
        )?;
        let rows =
            self.sql(stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))))?;
        let rows = self.sql(rows.collect::<Result<Vec<_>, _>>())?;
        rows.into_iter()
            .map(|(id, text)| {
                serde_json::from_str(&text)
                    .map(|p| (id, p))
                    .map_err(|e| self.damaged(id, format!("search pair: {e}")))
            })
            .collect()
    }

    /// The blocks of search trial `trial_id`, both arms, in the order they ran.
    pub fn search_blocks(&self, trial_id: i64) -> Result<Vec<Block>, JournalError> {
        if !self.has_table("search_blocks")? {
            return Ok(Vec::new());
        }
        let mut stmt = self.sql(
            self.conn
                .prepare("SELECT block FROM search_blocks WHERE trial_id = ?1 ORDER BY idx"),
        )?;
        let rows = self.sql(stmt.query_map(params![trial_id], |r| r.get::<_, String>(0)))?;
        let rows = self.sql(rows.collect::<Result<Vec<_>, _>>())?;
        rows.into_iter()
            .map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| self.damaged(trial_id, format!("search block: {e}")))
            })
            .collect()
    }

    fn damaged(&self, id: i64, why: String) -> JournalError {
        JournalError::Damaged {
            path: self.path.clone(),
            id,
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interleave::search::{arm_summary, PairedTrial};
    use crate::interleave::{Side, Verdict};
    use crate::journal::Phase;
    use crate::objective::LevelSummary;
    use crate::space::Config;

    #[test]
    fn a_trials_pair_and_blocks_round_trip_and_a_rerun_replaces_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut j = Journal::create(&path, "{}", 1).unwrap();
        assert!(j.search_pairs().unwrap().is_empty());
        let id = j
            .begin_trial(Phase::Search, &Config::new(), "seed")
            .unwrap();
        let blocks: Vec<Block> = [Side::A, Side::B, Side::B, Side::A]
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let mut b = Block::from_figures(s, 0.9, 100.0 + i as f64, [1.0, 2.0, 3.0]);
                b.index = i;
                b.pair = i / 2;
                b
            })
            .collect();
        let reference: LevelSummary = arm_summary("c=1", &blocks, Side::A).unwrap();
        let pair = PairedTrial {
            incumbent: Config::new(),
            candidate: Config::new(),
            reference: reference.clone(),
            metric: "throughput".into(),
            verdict: Verdict::Undecided,
            ratio: 1.01,
            ci_low: Some(0.9),
            ci_high: Some(1.1),
            pairs: 2,
            blocks: 4,
            incumbent_measured: Some(reference.clone()),
            candidate_measured: None,
            became_incumbent: false,
            told: Some(reference),
            log_se: None,
            stand_in: false,
        };
        j.record_search_pair(id, &pair, &blocks).unwrap();
        j.record_search_pair(id, &pair, &blocks[..2]).unwrap();
        assert_eq!(j.search_pairs().unwrap(), vec![(id, pair)]);
        let back = j.search_blocks(id).unwrap();
        assert_eq!(back, blocks[..2].to_vec());
        assert_eq!((back[0].arm, back[1].arm), (Side::A, Side::B));
        drop(j);
        // A reader without the lock sees them too.
        let (_, holder) = Journal::peek(&path).unwrap();
        assert_eq!(holder, None);
    }
}
