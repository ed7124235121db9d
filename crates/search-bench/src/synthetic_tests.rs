//! Tests of the five-parameter synthetic server (`synthetic`): its optimum, and the model
//! beating random search on it. Kept apart so the server file, which the search crate also
//! compiles into its unit tests, carries no tests of its own.

use crate::synthetic::*;
use webtune_search::{GpSampler, RandomSampler};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_optimum_is_feasible_and_the_default_far_from_it() {
    let opt = optimum();
    assert!(opt > 0.0);
    let d = true_value(&space().default_config());
    assert!(d > 0.0 && d < 0.5 * opt);
}

#[test]
fn the_model_beats_random_search_over_30_seeds() {
    let gp: Vec<f64> = (0..30)
        .map(|s| run(Box::new(GpSampler::default()), s, 15))
        .collect();
    let random: Vec<f64> = (0..30)
        .map(|s| run(Box::new(RandomSampler), s, 15))
        .collect();
    let hits = |v: &[f64]| v.iter().filter(|r| **r >= 0.95).count();
    assert!(hits(&gp) >= hits(&random), "{gp:?} {random:?}");
    // The typical winner is clearly better (numbers: examples/synthetic.rs).
    assert!(
        median(gp.clone()) >= median(random.clone()) + 0.03,
        "{gp:?} {random:?}"
    );
}
