//! Running the benchmark suite (`suite`): seeded studies of one server with one sampler,
//! the pick read at several budgets from one run (the study does not know its budget, so
//! the pick after 10 trials of a 25-trial study is the pick of a 10-trial study), where the
//! budget went, and the summary a row of the table in docs/tuning.md shows.

use crate::suite::Server;
use webtune_model::rng::Rng;
use webtune_search::objective::{Objective, Slo};
use webtune_search::sampler::Sampler;
use webtune_search::space::Config;
use webtune_search::study::{Next, Study, StudySettings, Why};

/// The reasons a trial is measured, in the order the table shows them.
pub const WHYS: [Why; 5] = [
    Why::Baseline,
    Why::Seed,
    Why::SpaceFilling,
    Why::Race,
    Why::Model,
];

/// One seeded study, read at each checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyRun {
    /// The pick's true value over the optimum (0: nothing feasible picked, or the pick truly
    /// breaks the SLO), per checkpoint.
    pub picks: Vec<f64>,
    /// Trials per reason (`WHYS` order), per checkpoint.
    pub spent: Vec<[usize; 5]>,
    /// The best true value (over the optimum) among the configurations measured so far, per
    /// checkpoint: what a pick could have been had the search known the truth.
    pub found: Vec<f64>,
    /// Every trial of the study, in order (what `family --trace` prints).
    pub trials: Vec<webtune_search::study::Trial>,
}

/// A fresh study of `server`.
pub fn study(server: &Server, sampler: Box<dyn Sampler>, settings: StudySettings) -> Study {
    let space = server.space();
    let seeds = server.seeds(&space);
    let slos = vec![Slo::parse(&server.slo()).expect("the suite's SLOs parse")];
    Study::new(
        space,
        Objective::MaximizeThroughput,
        slos,
        seeds,
        settings,
        sampler,
    )
}

/// Run one seeded study to the largest checkpoint.
pub fn run(
    server: &Server,
    optimum: f64,
    sampler: Box<dyn Sampler>,
    settings: &StudySettings,
    seed: u64,
    checkpoints: &[usize],
) -> StudyRun {
    let budget = checkpoints.iter().copied().max().unwrap_or(0);
    let settings = StudySettings {
        trials: budget,
        seed,
        ..settings.clone()
    };
    let mut s = study(server, sampler, settings);
    let mut noise = Rng::seeded(seed.wrapping_add(0xA5A5));
    let mut start_rng = Rng::seeded(seed.wrapping_add(0x5EED));
    let mut starts: std::collections::HashMap<String, f64> = Default::default();
    let mut out = StudyRun {
        picks: Vec::new(),
        spent: Vec::new(),
        found: Vec::new(),
        trials: Vec::new(),
    };
    let read = |s: &Study, out: &mut StudyRun| {
        let pick = s
            .best()
            .map_or(0.0, |b| server.true_value(&b.config) / optimum);
        let mut spent = [0usize; 5];
        for t in s.trials() {
            if let Some(i) = WHYS.iter().position(|w| *w == t.why) {
                spent[i] += 1;
            }
        }
        let found = s
            .trials()
            .iter()
            .map(|t| server.true_value(&t.config) / optimum)
            .fold(0.0, f64::max);
        out.picks.push(pick);
        out.spent.push(spent);
        out.found.push(found);
    };
    loop {
        if checkpoints.contains(&s.trials().len()) && out.picks.len() < checkpoints.len() {
            read(&s, &mut out);
        }
        let Next::Measure(c, why) = s.next() else {
            break;
        };
        // Noise per start: drawn once per configuration from its own stream (so servers
        // without it keep their recorded noise streams), kept for its re-measurements.
        let start = if server.start_noise > 0.0 {
            let key = format!("{c:?}");
            *starts.entry(key).or_insert_with(|| {
                1.0 + crate::synthetic::symmetric(&mut start_rng, server.start_noise)
            })
        } else {
            1.0
        };
        let outcome = server.measure_started(&c, start, &mut noise);
        s.record(c, why, outcome);
    }
    out.trials = s.trials().to_vec();
    out
}

/// What a row of the table shows: one server, one search, one budget, over the seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub runs: usize,
    /// Picks within 5% of the optimum (and truly feasible).
    pub hits: usize,
    pub median: f64,
    pub worst: f64,
    /// Mean trials per reason (`WHYS` order).
    pub spent: [f64; 5],
    /// Studies that measured a hit at all (whether or not they picked it).
    pub found: usize,
}

/// Summarise the picks (and budget use) of many seeded studies.
pub fn summarize(picks: &[f64], spent: &[[usize; 5]], found: &[f64]) -> Summary {
    let mut sorted = picks.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len().max(1);
    let mut mean = [0.0; 5];
    for s in spent {
        for i in 0..5 {
            mean[i] += s[i] as f64 / spent.len().max(1) as f64;
        }
    }
    Summary {
        runs: picks.len(),
        hits: picks.iter().filter(|p| **p >= 0.95).count(),
        median: sorted.get(sorted.len() / 2).copied().unwrap_or(0.0),
        worst: sorted.first().copied().unwrap_or(0.0),
        spent: if n > 0 { mean } else { [0.0; 5] },
        found: found.iter().filter(|p| **p >= 0.95).count(),
    }
}

/// Run one study per seed of `seeds` and summarise each checkpoint.
pub fn bench(
    server: &Server,
    optimum: f64,
    make: &dyn Fn() -> Box<dyn Sampler>,
    settings: &StudySettings,
    seeds: std::ops::Range<u64>,
    checkpoints: &[usize],
) -> Vec<Summary> {
    let runs: Vec<StudyRun> = seeds
        .map(|s| run(server, optimum, make(), settings, s, checkpoints))
        .collect();
    (0..checkpoints.len())
        .map(|i| {
            let picks: Vec<f64> = runs.iter().map(|r| r.picks[i]).collect();
            let spent: Vec<[usize; 5]> = runs.iter().map(|r| r.spent[i]).collect();
            let found: Vec<f64> = runs.iter().map(|r| r.found[i]).collect();
            summarize(&picks, &spent, &found)
        })
        .collect()
}

/// Noise-free check points for the ports: the default, the optimum and `n` random
/// configurations, with their true throughput and p99.
pub fn check_points(server: &Server, n: usize) -> Vec<(Config, f64, f64)> {
    let mut points = random_check_points(server, n);
    let at = server.optimum().1;
    let (tp, p99) = server.truth(&at);
    points.insert(1, (at, tp, p99));
    points
}

/// The same without the optimum (cheap): the default and `n` random configurations.
pub fn random_check_points(server: &Server, n: usize) -> Vec<(Config, f64, f64)> {
    let space = server.space();
    let mut rng = Rng::seeded(11);
    let mut configs = vec![space.default_config()];
    configs.extend((0..n).map(|_| webtune_search::sampler::random_config(&space, &mut rng)));
    configs
        .into_iter()
        .map(|c| {
            let (tp, p99) = server.truth(&c);
            (c, tp, p99)
        })
        .collect()
}

/// The GP sampler with the variant flags of the `suite` and `family` examples applied
/// (`--switch P`, `--step S`, `--ridge N`, `--between N`, `--second-look N`, `--surprise S|none`,
/// `--past-edge DEPTH|none`, `--turn MARGIN|none`, `--apart DEPTH`, `--cap 1`, `--beyond 1`, `--edge N`, `--candidates N`; see `GpSampler`), so a
/// change is measured before it becomes the default. A flag's bad value: an error line.
pub fn gp_from_args(args: &[String]) -> Result<webtune_search::GpSampler, String> {
    let mut gp = webtune_search::GpSampler::default();
    let value = |flag: &str| -> Result<Option<f64>, String> {
        match args.iter().position(|a| a == flag) {
            None => Ok(None),
            Some(i) => args
                .get(i + 1)
                .and_then(|v| v.parse().ok())
                .map(Some)
                .ok_or_else(|| format!("{flag}: needs a number")),
        }
    };
    if let Some(v) = value("--switch")? {
        gp.switch = v;
    }
    if let Some(v) = value("--step")? {
        gp.step = v;
    }
    if let Some(v) = value("--ridge")? {
        gp.ridge = v as usize;
    }
    if let Some(v) = value("--between")? {
        gp.between = v as usize;
    }
    if let Some(v) = value("--second-look")? {
        gp.second_look = v as usize;
    }
    // `FLAG none` turns an optional setting off; `FLAG NUMBER` sets it.
    let optional = |flag: &str| -> Result<Option<Option<f64>>, String> {
        let none = args
            .iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .is_some_and(|v| v == "none");
        if none {
            Ok(Some(None))
        } else {
            Ok(value(flag)?.map(Some))
        }
    };
    // `--surprise none`: a second look at every word measured once, whatever its run said.
    if let Some(v) = optional("--surprise")? {
        gp.surprise = v;
    }
    // `--past-edge none`: every run in the objective's posterior (the search before it).
    if let Some(v) = optional("--past-edge")? {
        gp.past_edge = v;
    }
    // `--turn MARGIN`: a ridge of two parameters' sum or difference fitted turned.
    if let Some(v) = optional("--turn")? {
        gp.turn = v;
    }
    if let Some(v) = value("--apart")? {
        gp.apart = Some(v);
    }
    if let Some(v) = value("--cap")? {
        gp.cap = v != 0.0;
    }
    if let Some(v) = value("--beyond")? {
        gp.beyond = v != 0.0;
    }
    if let Some(v) = value("--edge")? {
        gp.edge = v as usize;
    }
    if let Some(v) = value("--candidates")? {
        gp.candidates = v as usize;
    }
    Ok(gp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite_servers::{server, servers};
    use webtune_search::GpSampler;

    #[test]
    fn variant_flags_set_the_samplers_fields_and_a_bad_value_is_one_line() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let (none, default) = (gp_from_args(&[]).unwrap(), GpSampler::default());
        assert_eq!(
            (
                none.ridge,
                none.second_look,
                none.surprise,
                none.past_edge,
                none.turn
            ),
            (
                default.ridge,
                default.second_look,
                default.surprise,
                default.past_edge,
                default.turn
            )
        );
        let gp = gp_from_args(&args("--ridge 0 --surprise none")).unwrap();
        assert_eq!((gp.ridge, gp.surprise), (0, None));
        assert_eq!(
            gp_from_args(&args("--surprise 0.3")).unwrap().surprise,
            Some(0.3)
        );
        assert_eq!(
            gp_from_args(&args("--past-edge none")).unwrap().past_edge,
            None
        );
        assert_eq!(
            gp_from_args(&args("--past-edge 0.5")).unwrap().past_edge,
            Some(0.5)
        );
        assert_eq!(gp_from_args(&args("--turn none")).unwrap().turn, None);
        assert_eq!(gp_from_args(&args("--turn 2")).unwrap().turn, Some(2.0));
        assert_eq!(
            gp_from_args(&args("--surprise lots")).unwrap_err(),
            "--surprise: needs a number"
        );
    }

    /// Hits of the GP at 15 trials over 100 seeds must stay at least Optuna 5.0.0 TPE's
    /// recorded figure on the same server (docs/tuning.md, `examples/optuna_suite.py`).
    fn at_least_tpe(name: &str, tpe_hits: usize) {
        at_least(name, tpe_hits, tpe_hits);
    }

    /// The same with a margin: at least `floor` hits (≥ TPE's `tpe_hits`).
    fn at_least(name: &str, tpe_hits: usize, floor: usize) {
        let s = server(name).unwrap();
        let (opt, _) = s.optimum();
        let make = || Box::new(GpSampler::default()) as Box<dyn Sampler>;
        let r = &bench(&s, opt, &make, &StudySettings::default(), 0..100, &[15])[0];
        assert!(
            r.hits >= tpe_hits.max(floor),
            "{name}: {r:?}, TPE hit {tpe_hits}/100, the floor is {floor}"
        );
    }

    #[test]
    fn the_gp_hits_at_least_as_often_as_tpe_on_the_mpm_interaction() {
        at_least_tpe("apache-mpm", 10);
    }

    #[test]
    fn the_gp_hits_at_least_as_often_as_tpe_with_an_infeasible_default() {
        at_least_tpe("nginx-infeasible-default", 9);
    }

    #[test]
    fn the_gp_hits_at_least_as_often_as_tpe_on_the_slo_edge() {
        // With a margin: the local refinement of the acquisition (integer neighbours of an
        // SLO edge) took it from 3 to 11 of these 100 seeds (9 with the engine's generator);
        // TPE hit 2. (Over 300 seeds the gain is smaller, 5% to 6%: docs/tuning.md.)
        at_least("gunicorn-slo-cut", 2, 8);
    }

    #[test]
    fn the_gp_hits_at_least_as_often_as_tpe_under_heavy_noise() {
        at_least_tpe("haproxy-noisy", 13);
    }

    #[test]
    fn the_gp_hits_at_least_as_often_as_tpe_under_light_noise() {
        at_least_tpe("haproxy-quiet", 23);
    }

    #[test]
    fn the_pick_at_a_checkpoint_is_the_pick_of_a_study_of_that_budget() {
        let server = &servers()[0];
        let (opt, _) = server.optimum();
        let settings = StudySettings::default();
        let long = run(
            server,
            opt,
            Box::new(webtune_search::RandomSampler),
            &settings,
            4,
            &[6, 9],
        );
        let short = run(
            server,
            opt,
            Box::new(webtune_search::RandomSampler),
            &settings,
            4,
            &[6],
        );
        assert_eq!(long.picks[0], short.picks[0]);
        assert_eq!(long.spent[0], short.spent[0]);
        assert_eq!(long.spent[1].iter().sum::<usize>(), 9);
    }
}
