//! The forum generator's random numbers: a small, fast, seedable generator whose output
//! depends only on the seed, so the same seed gives the same forum on every machine and
//! every build.
//!
//! The generator itself is the engine's (`webtune_engine::rng`, xoshiro256** seeded through
//! SplitMix64); this module adds streams, Pareto draws and a Zipf sampler.

use webtune_engine::rng::Rng;

/// The engine's generator (xoshiro256** seeded through SplitMix64), with what the forum
/// needs on top: independent streams and heavy-tailed draws.
#[derive(Debug, Clone)]
pub struct ForumRng(Rng);

impl ForumRng {
    pub fn new(seed: u64) -> ForumRng {
        ForumRng(Rng::seeded(seed))
    }

    /// A generator for one purpose, derived from a seed and a stream number, so that
    /// changing how many numbers one part draws does not shift another part's numbers.
    pub fn stream(seed: u64, stream: u64) -> ForumRng {
        ForumRng::new(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0.unit()
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n.max(1))
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0.between(lo, hi)
    }

    /// Exponentially distributed with this mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        self.0.exp(mean)
    }

    /// Pareto distributed with scale 1 and shape `alpha` (heavy tail for small alpha).
    pub fn pareto(&mut self, alpha: f64) -> f64 {
        (1.0 - self.unit()).powf(-1.0 / alpha)
    }
}

/// Draws ranks 0..n with probability proportional to 1 / (rank + 1)^s (Zipf's law): a
/// few busy forums and prolific users, a long tail of quiet ones.
#[derive(Debug, Clone)]
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Zipf {
        let mut total = 0.0;
        let cumulative = (0..n.max(1))
            .map(|rank| {
                total += 1.0 / ((rank + 1) as f64).powf(s);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    pub fn sample(&self, rng: &mut ForumRng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = rng.unit() * total;
        self.cumulative
            .partition_point(|c| *c <= target)
            .min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers() {
        let a: Vec<u64> = (0..5)
            .scan(ForumRng::new(7), |r, _| Some(r.0.next_u64()))
            .collect();
        let b: Vec<u64> = (0..5)
            .scan(ForumRng::new(7), |r, _| Some(r.0.next_u64()))
            .collect();
        let c: Vec<u64> = (0..5)
            .scan(ForumRng::new(8), |r, _| Some(r.0.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn ranges_hold() {
        let mut rng = ForumRng::new(1);
        for _ in 0..10_000 {
            let x = rng.between(3, 9);
            assert!((3..=9).contains(&x));
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
        }
        let zipf = Zipf::new(10, 1.0);
        let mut counts = [0u32; 10];
        for _ in 0..10_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        assert!(counts[0] > counts[9] * 4, "{counts:?}");
    }
}
