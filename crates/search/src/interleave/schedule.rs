//! The block schedule: pairs of blocks, one to each arm, the order within each pair drawn at
//! random from a seeded generator (Abedi & Brecht, "Conducting repeatable experiments in
//! highly variable cloud computing environments", ICPE 2017: randomised multiple interleaved
//! trials), run within a time budget split evenly over `starts` (both arms restarted between
//! them), and stopped at the first pair boundary where the stopping rule (`judge`) decides.
//! The caller drives it: `next` says what to do, `record` takes what a block measured.

use super::block::{Block, Settings, Side};
use super::judge::{self, Judgement, Verdict};
use webtune_model::rng::Rng;

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Restart both arms: start number `start` (from 1; start 0 is the caller's first).
    Restart { start: usize },
    /// Send the load to `side` for one block.
    Measure {
        side: Side,
        pair: usize,
        start: usize,
    },
    /// The comparison is over.
    Done,
}

/// The protocol's state: the blocks so far and what comes next.
pub struct Protocol {
    settings: Settings,
    rng: Rng,
    blocks: Vec<Block>,
    pending: Vec<Side>,
    pair: usize,
    start: usize,
    pairs_in_start: usize,
    decided_after_s: Option<f64>,
    done: bool,
}

impl Protocol {
    pub fn new(settings: Settings) -> Protocol {
        Protocol {
            rng: Rng::seeded(settings.seed),
            settings,
            blocks: Vec::new(),
            pending: Vec::new(),
            pair: 0,
            start: 0,
            pairs_in_start: 0,
            decided_after_s: None,
            done: false,
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Seconds into the comparison when the stopping rule decided, if it did.
    pub fn decided_after_s(&self) -> Option<f64> {
        self.decided_after_s
    }

    /// What to do next, `elapsed_s` seconds into the comparison.
    pub fn next(&mut self, elapsed_s: f64) -> Step {
        if self.done {
            return Step::Done;
        }
        if !self.pending.is_empty() {
            return self.measure();
        }
        // A pair boundary: judge, then start a pair, restart, or end.
        if self.pairs_in_start > 0
            && self.may_decide()
            && judge::decide(&self.blocks, &self.settings).0 != Verdict::Undecided
        {
            self.decided_after_s = Some(elapsed_s);
            self.done = true;
            return Step::Done;
        }
        let s = &self.settings;
        let start_ends = s.budget_s * (self.start + 1) as f64 / s.starts as f64;
        if self.pairs_in_start > 0 && elapsed_s + 2.0 * s.block_s > start_ends + 1e-9 {
            if self.start + 1 < s.starts {
                self.start += 1;
                self.pairs_in_start = 0;
                return Step::Restart { start: self.start };
            }
            self.done = true;
            return Step::Done;
        }
        self.pending = if self.rng.below(2) == 0 {
            vec![Side::B, Side::A]
        } else {
            vec![Side::A, Side::B]
        };
        self.measure()
    }

    fn measure(&mut self) -> Step {
        let side = self.pending.pop().expect("a pending block");
        Step::Measure {
            side,
            pair: self.pair,
            start: self.start,
        }
    }

    /// A verdict may be taken only in the last start, once each start has its pairs.
    fn may_decide(&self) -> bool {
        self.start + 1 == self.settings.starts && self.pairs_in_start >= self.settings.min_pairs
    }

    /// Take what the block `next` asked for measured, placed at `started_s`, `wall_s` long.
    pub fn record(&mut self, mut block: Block, started_s: f64, wall_s: f64) {
        block.index = self.blocks.len();
        block.pair = self.pair;
        block.start = self.start;
        block.started_s = started_s;
        block.wall_s = wall_s;
        block.discard_s = self.settings.discard_s;
        self.blocks.push(block);
        if self.pending.is_empty() {
            self.pair += 1;
            self.pairs_in_start += 1;
        }
    }

    /// What the complete pairs say now.
    pub fn judgement(&self) -> Judgement {
        judge::judge(&self.blocks, &self.settings)
    }

    /// Stop now (a Ctrl-C): no further block.
    pub fn stop(&mut self) {
        self.done = true;
    }
}

#[cfg(test)]
mod tests {
    use super::super::block::Metric;
    use super::*;

    fn block(side: Side, rps: f64) -> Block {
        Block::from_figures(side, 1.0, rps, [1.0, 1.0, 1.0])
    }

    #[test]
    fn each_pair_holds_one_a_and_one_b_in_orders_that_vary() {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 60.0;
        s.seed = 7;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut pairs: Vec<Vec<Side>> = Vec::new();
        loop {
            match p.next(t) {
                Step::Measure { side, pair, start } => {
                    assert_eq!(start, 0);
                    if pairs.len() == pair {
                        pairs.push(Vec::new());
                    }
                    pairs[pair].push(side);
                    // Identical arms with noise-free figures: "same" must not come before
                    // min_pairs, and comes then.
                    p.record(block(side, 1000.0), t, 1.0);
                    t += 1.0;
                }
                Step::Restart { .. } => panic!("one start"),
                Step::Done => break,
            }
        }
        assert!(
            pairs.iter().all(|p| p.len() == 2 && p[0] != p[1]),
            "{pairs:?}"
        );
        assert_eq!(pairs.len(), 5, "decided `same` at the first pair it may");
        assert_eq!(p.judgement().verdict, Verdict::Same);
        // Orders vary over a long run, and the seed fixes them.
        let orders = |seed| {
            let mut s = Settings::new(Metric::Throughput);
            s.seed = seed;
            s.min_pairs = usize::MAX;
            let mut p = Protocol::new(s);
            let mut t = 0.0;
            let mut firsts = Vec::new();
            while let Step::Measure { side, .. } = p.next(t) {
                if p.pending.len() == 1 {
                    firsts.push(side);
                }
                p.record(block(side, 1000.0), t, 1.0);
                t += 1.0;
            }
            firsts
        };
        let a = orders(3);
        assert_eq!(a.len(), 90, "180 s of 1 s blocks");
        let a_first = a.iter().filter(|s| **s == Side::A).count();
        assert!(
            (25..=65).contains(&a_first),
            "{a_first} of 90 pairs began with A"
        );
        assert_eq!(a, orders(3));
        assert_ne!(a, orders(4));
    }

    #[test]
    fn starts_split_the_budget_and_restart_both_arms_between_them() {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 20.0;
        s.starts = 2;
        s.min_pairs = usize::MAX;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut restarts = Vec::new();
        loop {
            match p.next(t) {
                Step::Measure { side, .. } => {
                    p.record(block(side, 1000.0), t, 1.0);
                    t += 1.0;
                }
                Step::Restart { start } => restarts.push((start, t)),
                Step::Done => break,
            }
        }
        assert_eq!(restarts, vec![(1, 10.0)]);
        assert_eq!(p.blocks().len(), 20);
        assert!(p.blocks()[..10].iter().all(|b| b.start == 0));
        assert!(p.blocks()[10..].iter().all(|b| b.start == 1));
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut s = Settings::new(Metric::Throughput);
        assert!(s.validate().is_ok());
        s.block_s = 0.0;
        assert!(s.validate().is_err());
        let mut s = Settings::new(Metric::Throughput);
        s.discard_s = 1.0;
        assert!(s.validate().is_err());
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 1.0;
        assert!(s.validate().unwrap_err().contains("budget"));
    }
}
