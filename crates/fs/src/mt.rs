//! postmark's random-number generator, reproduced so that `webtune fs` and `webtune
//! postmark` with a given seed make exactly the choices postmark makes: the 1999 MT19937
//! of Matsumoto and Nishimura with its original seeding (Knuth's 69069 linear congruential
//! generator fills the state), and postmark's `RND(x)`, which is `genrand() % x` and draws
//! nothing when `x` is 0. Written from the published algorithm (ACM TOMACS 8(1), 1998).
//!
//! Not the `rand_mt` crate: it seeds with the 2002 `init_genrand`, whose sequence differs
//! from postmark's for every seed.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER: u32 = 0x8000_0000;
const LOWER: u32 = 0x7fff_ffff;

/// One generator; each worker owns one.
#[derive(Clone)]
pub struct PostmarkRng {
    state: Box<[u32; N]>,
    index: usize,
}

impl PostmarkRng {
    /// Seeded as postmark's `sgenrand(seed)`.
    pub fn new(seed: u32) -> PostmarkRng {
        let mut state = Box::new([0u32; N]);
        let mut s = seed;
        for word in state.iter_mut() {
            let high = s & 0xffff_0000;
            s = s.wrapping_mul(69069).wrapping_add(1);
            *word = high | ((s & 0xffff_0000) >> 16);
            s = s.wrapping_mul(69069).wrapping_add(1);
        }
        PostmarkRng { state, index: N }
    }

    fn refill(&mut self) {
        let mt = &mut self.state;
        let twist = |a: u32, b: u32, far: u32| {
            let y = (a & UPPER) | (b & LOWER);
            far ^ (y >> 1) ^ if y & 1 == 1 { MATRIX_A } else { 0 }
        };
        for k in 0..N {
            mt[k] = twist(mt[k], mt[(k + 1) % N], mt[(k + M) % N]);
        }
        self.index = 0;
    }

    /// The next 32-bit output (`genrand()`).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.refill();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// postmark's `RND(x)`: uniform-ish in `0..x`; 0 without drawing when `x` is 0.
    #[inline]
    pub fn rnd(&mut self, x: u64) -> u64 {
        if x == 0 {
            0
        } else {
            u64::from(self.next_u32()) % x
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_output_of_the_1999_generator() {
        // The first outputs of the 1999 generator (mt19937int.c, 1999/10/28) seeded with
        // sgenrand(4357) and sgenrand(42), as that C code, compiled on a 64-bit Linux,
        // printed them.
        let mut rng = PostmarkRng::new(4357);
        let first: Vec<u32> = (0..3).map(|_| rng.next_u32()).collect();
        assert_eq!(first, [2_867_219_139, 1_585_203_162, 3_113_124_129]);
        let mut rng = PostmarkRng::new(42);
        let first: Vec<u32> = (0..3).map(|_| rng.next_u32()).collect();
        assert_eq!(first, [4_179_544_424, 615_236_124, 4_165_290_828]);
    }

    #[test]
    fn rnd_of_zero_draws_nothing() {
        let mut a = PostmarkRng::new(42);
        let mut b = PostmarkRng::new(42);
        assert_eq!(a.rnd(0), 0);
        assert_eq!(a.rnd(10), b.rnd(10));
    }
}
