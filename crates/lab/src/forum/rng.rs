//! The forum generator's random numbers: a small, fast, seedable generator whose output
//! depends only on the seed, so the same seed gives the same forum on every machine and
//! every build.
//!
//! The algorithms are SplitMix64 (to spread a seed over the state) and xoshiro256**
//! (Blackman and Vigna, "Scrambled linear pseudorandom number generators", 2018,
//! <https://prng.di.unimi.it/>), written here from their published descriptions.

/// xoshiro256** seeded through SplitMix64.
#[derive(Debug, Clone)]
pub struct ForumRng {
    state: [u64; 4],
}

impl ForumRng {
    pub fn new(seed: u64) -> ForumRng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        ForumRng {
            state: [next(), next(), next(), next()],
        }
    }

    /// A generator for one purpose, derived from a seed and a stream number, so that
    /// changing how many numbers one part draws does not shift another part's numbers.
    pub fn stream(seed: u64, stream: u64) -> ForumRng {
        ForumRng::new(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift (Lemire); the tiny bias is irrelevant
    /// for generating test data.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n.max(1) as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// Exponentially distributed with this mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
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
            .scan(ForumRng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..5)
            .scan(ForumRng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..5)
            .scan(ForumRng::new(8), |r, _| Some(r.next_u64()))
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
