//! Walking journeys: the run-wide plan (`JourneyRun`: the journeys, where each one's steps
//! sit among the planned requests, which journey and users-file row each virtual user
//! gets) and one virtual user (`VirtualUser`: its journey, row, extracted values, cookie
//! jar and place in its walk). The HTTP/1.1 worker gives each connection one user when the
//! scenario has journeys (`worker`); a run without journeys has no user and pays nothing.
//!
//! A walk that fails (any error of one of its steps, `extract` included) ends there and is
//! counted under that step and kind; the same user then begins a new walk: from its first
//! step when the failure came before its `once` steps were done (it is not logged in),
//! else after them, with its cookies and values kept.

mod jar;

pub use jar::Jar;

use crate::rng::Rng;
use crate::scenario::{self, Ctx, Cursor, Journey, Scenario, Step, Think, WeightedPicker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Everything the workers share about a scenario's journeys.
#[derive(Debug)]
pub struct JourneyRun {
    pub journeys: Vec<Journey>,
    /// Per journey: the planned-request index of its first step (its steps follow in order).
    pub first_request: Vec<usize>,
    /// Per virtual user (a connection, numbered across workers): its journey and row.
    pub users: Vec<(usize, usize)>,
    /// The file's `think`, for steps without their own.
    pub think: Think,
    /// The target's host (a cookie's `Domain` must match it).
    pub host: String,
    /// https://: `Secure` cookies are sent.
    pub tls: bool,
    /// Open loop (`--rate`): each arrival is a walk by a fresh user, who leaves after it.
    pub open: bool,
    /// The budget (`-n`) counts walks begun, not requests: `--count journeys`, or an open
    /// loop (whose arrivals are walks).
    pub walk_budget: bool,
    /// Open loop: picks a fresh user's journey by weight.
    picker: WeightedPicker,
    /// Open loop: the next row of each journey's users file, all workers together.
    next_row: Vec<AtomicUsize>,
}

impl JourneyRun {
    /// Spread `users` virtual users over the journeys by weight (smooth weighted
    /// round-robin, so that the mix holds for any number of users and every run alike) and
    /// give each its row of its journey's users file: rows in turn, none used twice under
    /// `unique_users` (too few rows is an error naming the journey).
    /// An open loop (`open`) deals no users up front: each arrival gets a fresh one
    /// (`VirtualUser::arrive`).
    pub fn new(
        scenario: &Scenario,
        first_request: Vec<usize>,
        users: usize,
        host: &str,
        tls: bool,
        open: bool,
        count_journeys: bool,
    ) -> Result<JourneyRun, String> {
        let users = if open { 0 } else { users };
        let journeys = scenario.journeys.clone();
        let total: i64 = journeys.iter().map(|j| i64::from(j.weight)).sum();
        let mut credit = vec![0i64; journeys.len()];
        let mut taken = vec![0usize; journeys.len()];
        let mut assigned = Vec::with_capacity(users);
        for _ in 0..users {
            for (c, j) in credit.iter_mut().zip(&journeys) {
                *c += i64::from(j.weight);
            }
            let pick = (0..journeys.len())
                .max_by_key(|&k| (credit[k], std::cmp::Reverse(k)))
                .unwrap_or(0);
            credit[pick] -= total;
            let rows = journeys[pick].user_rows().max(1);
            assigned.push((pick, taken[pick] % rows));
            taken[pick] += 1;
        }
        for (j, n) in journeys.iter().zip(&taken) {
            if j.unique_users && *n > j.user_rows() {
                return Err(format!(
                    "journey {:?} has unique_users = true and {} rows in its users file, but {} virtual users walk it (-c {users}); add rows or lower -c",
                    j.name,
                    j.user_rows(),
                    n
                ));
            }
        }
        let weights: Vec<u32> = journeys.iter().map(|j| j.weight).collect();
        Ok(JourneyRun {
            next_row: journeys.iter().map(|_| AtomicUsize::new(0)).collect(),
            picker: WeightedPicker::new(&weights),
            journeys,
            first_request,
            users: assigned,
            think: scenario.think,
            host: host.to_string(),
            tls,
            open,
            walk_budget: open || count_journeys,
        })
    }

    /// The step planned request `request` is, and its journey.
    pub fn step_of(&self, request: usize) -> Option<(usize, &Step)> {
        self.first_request
            .iter()
            .enumerate()
            .rev()
            .find(|(_, &first)| first <= request)
            .and_then(|(j, &first)| self.journeys[j].steps.get(request - first).map(|s| (j, s)))
    }
}

/// How a step's answer left the user's walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// More steps follow.
    Going,
    /// The walk is complete; it took this many microseconds.
    Done(u64),
}

/// One virtual user: its journey, its row, its values and cookies, where it is.
#[derive(Debug)]
pub struct VirtualUser {
    pub journey: usize,
    row: usize,
    vars: Vec<Vec<u8>>,
    jar: Jar,
    /// The step in flight or next; None between walks.
    cursor: Option<Cursor>,
    /// Its `once` steps are still to run (a new user, or one whose start failed).
    fresh: bool,
    walk_started: Instant,
    /// The pause after the step that just finished.
    pub pause: Think,
    cookie_header: Vec<u8>,
}

impl VirtualUser {
    /// Virtual user number `index` (across all workers) of the run.
    pub fn new(run: &JourneyRun, index: usize, now: Instant) -> VirtualUser {
        let (journey, row) = run.users.get(index).copied().unwrap_or((0, 0));
        VirtualUser {
            journey,
            row,
            vars: vec![Vec::new(); run.journeys[journey].vars.len()],
            jar: Jar::default(),
            cursor: None,
            fresh: true,
            walk_started: now,
            pause: run.think,
            cookie_header: Vec::new(),
        }
    }

    /// Open loop: a fresh user for one arrival — its journey drawn by weight, the next row of
    /// that journey's users file. None when the journey has `unique_users` and every row
    /// has been used (the arrival is not sent).
    pub fn arrive(run: &JourneyRun, rng: &mut Rng, now: Instant) -> Option<VirtualUser> {
        let journey = run.picker.pick(rng);
        let j = &run.journeys[journey];
        let taken = run.next_row[journey].fetch_add(1, Ordering::Relaxed);
        if j.unique_users && taken >= j.user_rows() {
            return None;
        }
        let mut user = VirtualUser::new(run, usize::MAX, now);
        user.journey = journey;
        user.row = taken % j.user_rows().max(1);
        user.vars = vec![Vec::new(); j.vars.len()];
        Some(user)
    }

    /// Is a walk under way (a step in flight, or the user thinking between two)?
    pub fn in_walk(&self) -> bool {
        self.cursor.is_some()
    }

    /// The planned request of its next step (a new walk begins when none is under way,
    /// timed from `now`).
    pub fn next_request(&mut self, run: &JourneyRun, rng: &mut Rng, now: Instant) -> usize {
        let journey = &run.journeys[self.journey];
        let cursor = match self.cursor {
            Some(c) => c,
            None => {
                self.walk_started = now;
                let c = journey
                    .begin(self.fresh, rng)
                    .unwrap_or(Cursor { step: 0, left: 1 });
                self.cursor = Some(c);
                c
            }
        };
        run.first_request[self.journey] + cursor.step
    }

    /// The step in flight.
    pub fn step<'a>(&self, run: &'a JourneyRun) -> &'a Step {
        let step = self.cursor.map_or(0, |c| c.step);
        &run.journeys[self.journey].steps[step]
    }

    /// Does the step in flight need the answer's body (an extraction)?
    pub fn wants_body(&self, run: &JourneyRun) -> bool {
        !self.step(run).extract.is_empty()
    }

    /// Encode the step in flight: its templates with this user's values and row, and the
    /// user's cookies for its path.
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        &mut self,
        run: &JourneyRun,
        host_header: &str,
        keepalive: bool,
        http10: bool,
        rng: &mut Rng,
        seq: u64,
        now: Instant,
        out: &mut Vec<u8>,
    ) {
        let def = &self.step(run).request;
        let ctx = Ctx {
            vars: &self.vars,
            row: self.row,
        };
        let saved = def.has_header("cookie").then(|| rng.clone());
        scenario::encode_step_into(
            def,
            host_header,
            keepalive,
            http10,
            rng,
            seq,
            &ctx,
            b"",
            out,
        );
        self.jar
            .header_into(request_target(out), run.tls, now, &mut self.cookie_header);
        if self.cookie_header.is_empty() {
            return;
        }
        match saved {
            // The step sets its own Cookie header: render again with the same draws, the
            // jar's cookies joined to it.
            Some(draws) => {
                *rng = draws;
                scenario::encode_step_into(
                    def,
                    host_header,
                    keepalive,
                    http10,
                    rng,
                    seq,
                    &ctx,
                    &self.cookie_header,
                    out,
                );
            }
            // Else the jar's header goes in after the request line (no second rendering).
            None => {
                let at = out
                    .windows(2)
                    .position(|w| w == b"\r\n")
                    .map_or(out.len(), |p| p + 2);
                let header = &self.cookie_header;
                out.splice(
                    at..at,
                    b"Cookie: "
                        .iter()
                        .chain(header.iter())
                        .chain(b"\r\n".iter())
                        .copied(),
                );
            }
        }
    }

    /// The answer to the step in flight arrived complete: keep its cookies, take its
    /// values. False when an extraction found nothing (the `extract` error).
    pub fn on_answer(
        &mut self,
        run: &JourneyRun,
        request_bytes: &[u8],
        set_cookies: &[u8],
        body: &[u8],
        now: Instant,
    ) -> bool {
        if !set_cookies.is_empty() {
            let target = request_target(request_bytes);
            self.jar.store_all(set_cookies, target, &run.host, now);
        }
        let step = &run.journeys[self.journey].steps[self.cursor.map_or(0, |c| c.step)];
        for e in &step.extract {
            match e.pattern.find(body) {
                Some(value) => {
                    let slot = &mut self.vars[e.var];
                    slot.clear();
                    slot.extend_from_slice(&value);
                }
                None => return false,
            }
        }
        true
    }

    /// The step in flight succeeded: move on. Sets `pause` (the step's think time).
    pub fn advance(&mut self, run: &JourneyRun, rng: &mut Rng, now: Instant) -> Outcome {
        let journey = &run.journeys[self.journey];
        let Some(at) = self.cursor else {
            return Outcome::Going;
        };
        self.pause = journey.steps[at.step].think.unwrap_or(run.think);
        self.cursor = journey.next(at, rng);
        match self.cursor {
            Some(next) => {
                if !journey.steps[next.step].once {
                    self.fresh = false;
                }
                Outcome::Going
            }
            None => {
                self.fresh = false;
                Outcome::Done(now.saturating_duration_since(self.walk_started).as_micros() as u64)
            }
        }
    }

    /// The step in flight failed: the walk ends. Returns the step's name for the count.
    pub fn fail<'a>(&mut self, run: &'a JourneyRun) -> &'a str {
        let name = &self.step(run).request.name;
        self.cursor = None;
        self.pause = run.think;
        name
    }
}

/// The request target (path and query) of encoded request bytes.
fn request_target(request: &[u8]) -> &[u8] {
    let mut parts = request.splitn(3, |&b| b == b' ');
    parts.next();
    parts.next().unwrap_or(b"/")
}
