//! Tests of the model-based sampler (`acquisition`), kept apart to keep `acquisition.rs`
//! short.

use super::*;

#[test]
fn the_refinement_tries_the_next_integers_and_every_choice() {
    use crate::space::{Kind, ParamSpec, Value};
    let space = Space {
        params: vec![
            ParamSpec {
                name: "w".into(),
                kind: Kind::Int {
                    lo: 1,
                    hi: 128,
                    log: true,
                },
                default: Value::Int(4),
            },
            ParamSpec {
                name: "k".into(),
                kind: Kind::Choice(vec![Value::Word("a".into()), Value::Word("b".into())]),
                default: Value::Word("a".into()),
            },
        ],
        inert: Vec::new(),
    };
    let p = &space.params[0];
    let at = |x: i64| p.encode(&Value::Int(x));
    let near: Vec<Value> = neighbours(&space, 0, at(22))
        .into_iter()
        .map(|u| p.decode(u))
        .collect();
    let want: Vec<Value> = [20, 21, 23, 24].into_iter().map(Value::Int).collect();
    assert_eq!(near, want);
    // At the end of the range only the integers inside it.
    assert_eq!(neighbours(&space, 0, at(128)).len(), 2);
    assert!(neighbours(&space, 1, 0.25).is_empty());
    let words: Vec<Value> = choices(&space, 1)
        .into_iter()
        .map(|u| space.params[1].decode(u))
        .collect();
    assert_eq!(
        words,
        vec![Value::Word("a".into()), Value::Word("b".into())]
    );
    assert!(choices(&space, 0).is_empty());
}
#[test]
fn a_ridge_candidate_keeps_the_product_of_two_log_parameters() {
    use crate::space::{Kind, ParamSpec, Value};
    let int = |name: &str, lo, hi| ParamSpec {
        name: name.into(),
        kind: Kind::Int { lo, hi, log: true },
        default: Value::Int(lo),
    };
    let space = Space {
        params: vec![int("workers", 1, 1024), int("threads", 1, 4096)],
        inert: Vec::new(),
    };
    let mut c = Config::new();
    c.insert("workers".into(), Value::Int(64));
    c.insert("threads".into(), Value::Int(64));
    let u = space.encode(&c);
    let spans: Vec<Option<f64>> = (0..2).map(|i| log_span(&space, i)).collect();
    let mut rng = Rng::seeded(3);
    let mut moved = 0;
    for _ in 0..200 {
        let v = space.decode(&ridge_candidate(&u, &[0, 1], &spans, 0.1, &mut rng));
        let (Value::Int(w), Value::Int(t)) = (&v["workers"], &v["threads"]) else {
            unreachable!()
        };
        if *w != 64 {
            moved += 1;
        }
        // The product stays near 64 × 64 (up to rounding each to an integer).
        let ratio = (*w * *t) as f64 / 4096.0;
        assert!((0.8..1.25).contains(&ratio), "{w} × {t}");
    }
    assert!(moved > 100, "{moved}");
}

#[test]
fn a_second_look_goes_to_the_surprising_word_away_from_its_first_look() {
    use crate::space::{Kind, ParamSpec, Value};
    let space = Space {
        params: vec![
            ParamSpec {
                name: "n".into(),
                kind: Kind::Int {
                    lo: 1,
                    hi: 1000,
                    log: true,
                },
                default: Value::Int(1),
            },
            ParamSpec {
                name: "mode".into(),
                kind: Kind::Choice(["a", "b", "c"].map(|w| Value::Word(w.into())).to_vec()),
                default: Value::Word("a".into()),
            },
        ],
        inert: Vec::new(),
    };
    let config = |n: i64, w: &str| -> Config {
        [
            ("n".to_string(), Value::Int(n)),
            ("mode".to_string(), Value::Word(w.into())),
        ]
        .into_iter()
        .collect()
    };
    // Word a peaks at n = 100; b's one run is far below a's curve at the same n (a
    // surprise), c's one run is on a's curve (a word that changes nothing).
    let curve = |n: i64| 8.0 - ((n as f64).ln() - 100f64.ln()).powi(2) / 4.0;
    let mut history: Vec<Observation> = [1, 5, 20, 60, 100, 150, 400, 1000]
        .into_iter()
        .map(|n| (config(n, "a"), curve(n)))
        .collect::<Vec<_>>()
        .into_iter()
        .chain([
            (config(400, "b"), curve(400) - 2.0),
            (config(5, "c"), curve(5)),
        ])
        .map(|(c, y)| Observation {
            config: c,
            score: Some(y),
            margin: -1.0,
        })
        .collect();
    let cat = [false, true];
    let fit = |h: &[Observation]| {
        let xs: Vec<Vec<f64>> = h.iter().map(|o| space.encode(&o.config)).collect();
        let ys: Vec<f64> = h.iter().filter_map(|o| o.score).collect();
        Gp::fit_best(&xs, &ys, &cat).unwrap()
    };
    let gp = fit(&history);
    let inc = space.encode(&config(100, "a"));
    let at = |n: i64| space.params[0].encode(&Value::Int(n));
    let sampler = GpSampler {
        second_look: 9,
        surprise: Some(0.5),
        ..GpSampler::default()
    };
    for seed in 0..20 {
        let c = sampler
            .second_look(&space, &inc, &gp, &history, &mut Rng::seeded(seed))
            .expect("b was measured once");
        assert_eq!(c["mode"], Value::Word("b".into()), "{c:?}");
        let Value::Int(n) = c["n"] else {
            unreachable!()
        };
        // Away from b's first look (400) and from the incumbent's n (100).
        assert!(
            (at(n) - at(400)).abs() >= 0.25 && (at(n) - at(100)).abs() >= 0.15,
            "{n}"
        );
    }
    // Without the surprise test c is a candidate too; off, no second look.
    let all = GpSampler {
        surprise: None,
        ..sampler
    };
    let words: std::collections::BTreeSet<String> = (0..40)
        .filter_map(|seed| all.second_look(&space, &inc, &gp, &history, &mut Rng::seeded(seed)))
        .map(|c| c["mode"].to_string())
        .collect();
    assert_eq!(words.into_iter().collect::<Vec<_>>(), ["b", "c"]);
    // Once b has had its second look, the limit of one word stops further looks.
    history.push(Observation {
        config: config(20, "b"),
        score: Some(curve(20) - 2.0),
        margin: -1.0,
    });
    let gp = fit(&history);
    let one = GpSampler {
        second_look: 1,
        ..all
    };
    assert!(one
        .second_look(&space, &inc, &gp, &history, &mut Rng::seeded(1))
        .is_none());
    assert!(all
        .second_look(&space, &inc, &gp, &history, &mut Rng::seeded(1))
        .is_some_and(|c| c["mode"] == Value::Word("c".into())));
}

#[test]
fn expected_improvement_prefers_mean_and_uncertainty() {
    assert!(expected_improvement(1.0, 0.1, 0.0) > expected_improvement(0.5, 0.1, 0.0));
    assert!(expected_improvement(0.0, 1.0, 0.0) > expected_improvement(0.0, 0.1, 0.0));
    assert!(expected_improvement(-5.0, 0.1, 0.0) >= 0.0);
}

/// The integer value of `name` in `c`.
fn int(c: &Config, name: &str) -> i64 {
    match c[name] {
        crate::space::Value::Int(x) => x,
        _ => unreachable!("{name} is an integer"),
    }
}

/// One integer `w` in 1..=64 (`study::tests::one_int_space`); runs climb with it to w = 24
/// and collapse past an edge (infeasible, p99 ×3, a quarter of the throughput) at 36 and 48;
/// a starved default at 1.
fn cliff_history() -> (Space, Vec<Observation>) {
    let run = |w: i64, score: f64, margin: f64| Observation {
        config: [("w".to_string(), crate::space::Value::Int(w))].into(),
        score: Some(score),
        margin,
    };
    let history = vec![
        run(1, 0.2, 1.5),
        run(1, 0.25, 1.5),
        run(6, 1.0, -0.5),
        run(12, 1.3, -0.5),
        run(18, 1.6, -0.5),
        run(24, 1.9, -0.5),
        run(36, 0.5, 2.0),
        run(48, 0.4, 2.0),
    ];
    (crate::study::tests::one_int_space(1), history)
}

#[test]
fn runs_past_the_edge_leave_the_posterior_but_not_the_fit() {
    let (space, history) = cliff_history();
    let scored: Vec<&Observation> = history.iter().collect();
    // Every infeasible run far below the best feasible one and far past its SLO: the
    // collapsed runs and the starved default alike (nothing tells them apart by their
    // figures); the default still shapes the fit's hyper-parameters.
    let past = crate::edge::past_edge(&scored, 0.3);
    assert_eq!(past, [true, true, false, false, false, false, true, true]);
    // A depth beyond the gap (1.9 − 0.4) flags none; nor does anything with no feasible run.
    assert!(crate::edge::past_edge(&scored, 2.0).iter().all(|p| !p));
    assert!(crate::edge::past_edge(&scored[6..], 0.3).iter().all(|p| !p));
    let xs: Vec<Vec<f64>> = history.iter().map(|o| space.encode(&o.config)).collect();
    let ys: Vec<f64> = history.iter().filter_map(|o| o.score).collect();
    let full = Gp::fit_best(&xs, &ys, &[false]).unwrap();
    let kept: Vec<usize> = (0..xs.len()).filter(|i| !past[*i]).collect();
    let kx: Vec<Vec<f64>> = kept.iter().map(|i| xs[*i].clone()).collect();
    let ky: Vec<f64> = kept.iter().map(|i| ys[*i]).collect();
    let post = full.conditioned_on(&kx, &ky).unwrap();
    // The same length scales; between the last good run and the first collapsed one the
    // posterior no longer falls with the collapse.
    assert_eq!(post.length_scales(), full.length_scales());
    let at = |w: i64| space.encode(&[("w".to_string(), crate::space::Value::Int(w))].into());
    let (with, _) = full.predict(&at(30));
    let (without, _) = post.predict(&at(30));
    assert!(without > with + 0.2, "{without} vs {with}");
}

#[test]
fn the_search_climbs_to_the_edge_when_the_collapse_leaves_the_posterior() {
    let (space, history) = cliff_history();
    for seed in 0..5 {
        let mut on = GpSampler::default();
        let mut off = GpSampler {
            past_edge: None,
            ..GpSampler::default()
        };
        let a = int(&on.ask(&space, &history, &mut Rng::seeded(seed)), "w");
        let b = int(&off.ask(&space, &history, &mut Rng::seeded(seed)), "w");
        // Past the best run (24), short of the collapse (36); every run in the posterior,
        // the mean falls before the edge and the search stays below its best run.
        assert!((25..36).contains(&a), "seed {seed}: {a}");
        assert!(b < a, "seed {seed}: {b} vs {a}");
    }
}

/// Two log integers `a`, `b` in 1..=1024 and runs of a ridge along a·b = 1024 (a sum of
/// logs): 2 on its crest, falling off it, measured at six points on or next to the crest and
/// twelve off it; none on the crest with a or b beyond 128.
fn ridge_history() -> (Space, Vec<Observation>) {
    use crate::space::{Kind, ParamSpec, Value};
    let int = |name: &str| ParamSpec {
        name: name.into(),
        kind: Kind::Int {
            lo: 1,
            hi: 1024,
            log: true,
        },
        default: Value::Int(1),
    };
    let space = Space {
        params: vec![int("a"), int("b")],
        inert: Vec::new(),
    };
    let score = |a: i64, b: i64| {
        let off = ((a * b) as f64).ln() - 1024f64.ln();
        2.0 * (-(off / 1.2).powi(2)).exp()
    };
    let points = [
        (8, 128),
        (16, 64),
        (32, 32),
        (12, 90),
        (24, 40),
        (48, 20),
        (1, 1),
        (4, 4),
        (1, 64),
        (64, 1),
        (512, 512),
        (1024, 64),
        (64, 1024),
        (128, 128),
        (256, 2),
        (2, 200),
        (700, 30),
        (30, 700),
    ];
    let history = points
        .iter()
        .map(|&(a, b)| Observation {
            config: [
                ("a".to_string(), Value::Int(a)),
                ("b".to_string(), Value::Int(b)),
            ]
            .into(),
            score: Some(score(a, b)),
            margin: -1.0,
        })
        .collect();
    (space, history)
}

#[test]
fn a_ridge_of_two_parameters_is_fitted_turned_and_carries_along_it() {
    let (space, history) = ridge_history();
    let cat = [false, false];
    let xs: Vec<Vec<f64>> = history.iter().map(|o| space.encode(&o.config)).collect();
    let ys: Vec<f64> = history.iter().filter_map(|o| o.score).collect();
    let plain = Gp::fit_best(&xs, &ys, &cat).unwrap();
    let spans: Vec<Option<f64>> = (0..2).map(|i| log_span(&space, i)).collect();
    let turn = turn_for(&plain, &cat, &spans).unwrap();
    let turned = Gp::fit_best_turned(&xs, &ys, &cat, (&xs, &ys), Some(turn)).unwrap();
    // The turned fit explains the runs better than the sampler's margin asks.
    let margin = GpSampler::default().turn.unwrap();
    assert!(
        turned.log_posterior() > plain.log_posterior() + margin,
        "{} vs {}",
        turned.log_posterior(),
        plain.log_posterior()
    );
    // On the crest beyond the runs (a·b = 1024 at a = 256, b = 4; the nearest run, at
    // 256 × 2, is off the crest and scored 1.44), the turned model expects the crest (2);
    // the plain one stays near that neighbour's score.
    let at = |a: i64, b: i64| {
        space.encode(
            &[
                ("a".to_string(), crate::space::Value::Int(a)),
                ("b".to_string(), crate::space::Value::Int(b)),
            ]
            .into(),
        )
    };
    let (on_turned, _) = turned.predict(&at(256, 4));
    let (on_plain, _) = plain.predict(&at(256, 4));
    assert!(
        on_turned > 1.5 && on_turned > on_plain + 0.3,
        "{on_turned} vs {on_plain}"
    );
    // Off the ridge there, both say low.
    assert!(turned.predict(&at(256, 256)).0 < 0.5);
}

#[test]
fn turn_for_pairs_only_like_ranges() {
    let (space, history) = ridge_history();
    let xs: Vec<Vec<f64>> = history.iter().map(|o| space.encode(&o.config)).collect();
    let ys: Vec<f64> = history.iter().filter_map(|o| o.score).collect();
    let gp = Gp::fit_best(&xs, &ys, &[false, false]).unwrap();
    // A log range beside a linear one: no turn; fewer than two ranges: none.
    assert!(turn_for(&gp, &[false, false], &[Some(6.9), None]).is_none());
    assert!(turn_for(&gp, &[false, true], &[Some(6.9), None]).is_none());
    let t = turn_for(&gp, &[false, false], &[None, None]).unwrap();
    assert_eq!((t.wi, t.wj), (1.0, 1.0));
}

#[test]
fn the_search_follows_a_ridge_beyond_its_runs_when_turned() {
    let (space, history) = ridge_history();
    let ab = |c: &Config| (int(c, "a"), int(c, "b"));
    for seed in 0..5 {
        let mut on = GpSampler::default();
        let mut off = GpSampler {
            turn: None,
            ..GpSampler::default()
        };
        // Turned, the proposal is on the ridge (a·b within ×2 of 1024) and past the runs
        // along it (one of a, b beyond 256, where the runs on the ridge stop at 128);
        // plain, it stays among the runs.
        let (a, b) = ab(&on.ask(&space, &history, &mut Rng::seeded(seed)));
        assert!(
            (512..=2048).contains(&(a * b)) && a.max(b) >= 256,
            "seed {seed}: {a} × {b}"
        );
        let (a, b) = ab(&off.ask(&space, &history, &mut Rng::seeded(seed)));
        assert!(a.max(b) < 256, "seed {seed}: {a} × {b}");
    }
}
