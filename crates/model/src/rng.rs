//! A small, fast, seedable pseudo-random generator for the hot path: scenario picks,
//! template placeholders and think times. Not for anything secret.
//!
//! The generator is xoshiro256** by David Blackman and Sebastiano Vigna ("Scrambled Linear
//! Pseudorandom Number Generators", ACM TOMS 2021; reference description at
//! <https://prng.di.unimi.it/>), seeded through splitmix64 as its authors recommend.
//! Bounded integers use Daniel Lemire's multiply-and-reject method ("Fast Random Integer
//! Generation in an Interval", ACM TOMACS 2019), which is exactly uniform.

/// xoshiro256**: 256 bits of state, period 2^256 − 1, one `u64` per call.
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

/// One step of splitmix64 (Steele, Lea, Flood: "Fast Splittable Pseudorandom Number
/// Generators", OOPSLA 2014); used to spread a 64-bit seed over the whole state.
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator whose sequence is fully determined by `seed` (any value, 0 included).
    pub fn seeded(seed: u64) -> Rng {
        let mut x = seed;
        let mut state = [0u64; 4];
        for word in &mut state {
            *word = splitmix64(&mut x);
        }
        // splitmix64 is a bijection on a counter, so four outputs are never all zero; keep
        // the guard anyway, an all-zero state would only ever yield zeros.
        if state == [0; 4] {
            state[0] = 1;
        }
        Rng { state }
    }

    /// The next 64 uniformly distributed bits.
    #[inline]
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

    /// Uniform in `0..n` (exactly uniform); 0 when `n` is 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        let mut low = m as u64;
        if low < n {
            // Reject the few products that would favour some values (Lemire 2019).
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `lo..=hi` (the bounds in either order).
    #[inline]
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(), // the whole u64 range
        }
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with the given mean (inverse transform); 0 for a mean ≤ 0.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        if mean <= 0.0 || !mean.is_finite() {
            return 0.0;
        }
        // 1 − unit() lies in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // Worked by hand from the reference algorithm
        // (https://prng.di.unimi.it/xoshiro256starstar.c) with the state {1, 2, 3, 4}.
        let mut rng = Rng {
            state: [1, 2, 3, 4],
        };
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, vec![11520, 0, 1509978240]);
    }

    #[test]
    fn same_seed_same_sequence_different_seed_different() {
        let a: Vec<u64> = {
            let mut r = Rng::seeded(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::seeded(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::seeded(8);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut zero = Rng::seeded(0);
        assert!((0..4).any(|_| zero.next_u64() != 0));
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::seeded(1);
        let mut seen = [0u32; 7];
        for _ in 0..10_000 {
            let v = rng.below(7);
            assert!(v < 7);
            seen[v as usize] += 1;
        }
        // Each value expected ~1429 times; a fair generator is nowhere near these bounds.
        assert!(seen.iter().all(|&n| (1200..1650).contains(&n)), "{seen:?}");
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn between_is_inclusive_and_handles_the_full_range() {
        let mut rng = Rng::seeded(2);
        let mut hit_lo = false;
        let mut hit_hi = false;
        for _ in 0..10_000 {
            let v = rng.between(3, 5);
            assert!((3..=5).contains(&v));
            hit_lo |= v == 3;
            hit_hi |= v == 5;
        }
        assert!(hit_lo && hit_hi);
        assert_eq!(rng.between(9, 9), 9);
        let _ = rng.between(0, u64::MAX); // must not overflow
    }

    #[test]
    fn unit_and_exp_have_the_right_means() {
        let mut rng = Rng::seeded(3);
        let n = 100_000;
        let mut sum_unit = 0.0;
        let mut sum_exp = 0.0;
        for _ in 0..n {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            sum_unit += u;
            let e = rng.exp(100.0);
            assert!(e >= 0.0 && e.is_finite());
            sum_exp += e;
        }
        let mean_unit = sum_unit / n as f64;
        let mean_exp = sum_exp / n as f64;
        assert!((mean_unit - 0.5).abs() < 0.01, "{mean_unit}");
        assert!((mean_exp - 100.0).abs() < 5.0, "{mean_exp}");
        assert_eq!(rng.exp(0.0), 0.0);
        assert_eq!(rng.exp(-1.0), 0.0);
    }
}
