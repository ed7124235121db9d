//! Picking a request of the mix in proportion to its weight.

use crate::rng::Rng;

/// Picks request indices in proportion to their weights in O(log n) (a binary search over
/// the running sums).
#[derive(Debug, Clone)]
pub struct WeightedPicker {
    /// `cumulative[i]` = sum of weights 0..=i.
    cumulative: Vec<u64>,
}

impl WeightedPicker {
    /// Weights of zero are never picked; when all are zero every index is equally likely.
    pub fn new(weights: &[u32]) -> WeightedPicker {
        let all_zero = weights.iter().all(|&w| w == 0);
        let mut sum = 0u64;
        let cumulative = weights
            .iter()
            .map(|&w| {
                sum += if all_zero { 1 } else { u64::from(w) };
                sum
            })
            .collect();
        WeightedPicker { cumulative }
    }

    /// An index into the weights given to `new` (0 when that was empty).
    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> usize {
        match self.cumulative.last() {
            None => 0,
            Some(&total) => {
                let r = rng.below(total);
                self.cumulative.partition_point(|&c| c <= r)
            }
        }
    }
}
