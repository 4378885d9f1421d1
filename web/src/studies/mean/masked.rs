/*!
What the relay and the aggregator actually saw in SecureAgg: the masked vectors y_s, as bits,
with two plain statistics of how uniform they look, next to the same statistics of a plain
fixed-point number (the public noise sum Σê_s, encoded by the core in the study's format).

- The share of 1-bits: ½ for uniform bits; z = (ones − n/2)/√(n/4) with its two-sided p-value.
- The run of equal leading bits: a uniform 64-bit word has on average 2 − 2⁻⁶³ ≈ 2; a small
  fixed-point number has a long run of 0s (positive) or 1s (negative) before its digits start.
*/

use capelab_core::rng::derive;
use capelab_core::special::normal_sf;
use capelab_core::study::mean::{AttemptReport, StudyOutcome};

use crate::components::charts::bits::{BitGroup, BitImageSpec, MAX_ELEMENTS};
use crate::frame::dashboard::FinishedRound;

/// Uniformity statistics of some 64-bit words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BitStats {
    pub bits: usize,
    pub ones: usize,
    /// (ones − n/2)/√(n/4).
    pub z: f64,
    /// Two-sided p-value of `z` under uniform bits.
    pub p_value: f64,
    /// Mean length of the run of equal leading bits (uniform: ≈ 2).
    pub leading_run: f64,
}

impl BitStats {
    pub fn of(words: &[u64]) -> Option<BitStats> {
        if words.is_empty() {
            return None;
        }
        let bits = words.len() * 64;
        let ones: usize = words.iter().map(|w| w.count_ones() as usize).sum();
        let z = (ones as f64 - bits as f64 / 2.0) / (bits as f64 / 4.0).sqrt();
        let runs: u32 = words
            .iter()
            .map(|&w| if w >> 63 == 1 { w.leading_ones() } else { w.leading_zeros() })
            .sum();
        Some(BitStats {
            bits,
            ones,
            z,
            p_value: (2.0 * normal_sf(z.abs())).min(1.0),
            leading_run: runs as f64 / words.len() as f64,
        })
    }

    pub fn share(&self) -> f64 {
        self.ones as f64 / self.bits as f64
    }

    /// One line for a caption.
    pub fn sentence(&self) -> String {
        format!(
            "1-bits: {:.1}% of {} (uniform: 50%, z = {:+.2}, p = {:.2}); equal leading bits: {:.1} \
             on average (uniform: 2.0)",
            100.0 * self.share(),
            self.bits,
            self.z,
            self.p_value,
            self.leading_run,
        )
    }
}

/// The attempt whose SecureAgg the chart shows: the one that formed the estimate, else the last
/// one that received masked inputs.
pub fn shown_attempt(outcome: &StudyOutcome) -> Option<&AttemptReport> {
    let formed = outcome.estimates().map(|e| e.attempt);
    outcome
        .attempts
        .iter()
        .rev()
        .find(|a| Some(a.attempt) == formed && !a.masked_inputs.is_empty())
        .or_else(|| outcome.attempts.iter().rev().find(|a| !a.masked_inputs.is_empty()))
}

/// The public noise sum of `attempt` in the study's fixed-point format (the core's encoder; the
/// decoded sum lies on the format's grid, so no rounding happens).
pub fn plain_noise_sum(outcome: &StudyOutcome, attempt: &AttemptReport) -> Option<Vec<u64>> {
    let sum = attempt.noise_sum.as_ref()?;
    let mut rng = derive(0, "capelab-web/plain-encoding");
    outcome.noise.format.encode(sum, &mut rng).ok().map(|(ring, _)| ring)
}

/// Masked inputs as bits, next to the plain noise sum.
pub fn bit_image(round: &FinishedRound) -> Option<BitImageSpec> {
    let outcome = &round.outcome;
    let attempt = shown_attempt(outcome)?;
    let masked: Vec<u64> = attempt.masked_inputs.iter().flat_map(|m| m.ring.clone()).collect();
    let stats = BitStats::of(&masked)?;
    let mut groups = vec![BitGroup {
        heading: format!(
            "What the relay and the dashboard received in R2: masked y_s (attempt {})",
            attempt.attempt
        ),
        rows: attempt
            .masked_inputs
            .iter()
            .map(|m| (format!("{} (#{})", round.name(m.site), m.site), m.ring.clone()))
            .collect(),
        caption: stats.sentence(),
    }];
    if let Some(plain) = plain_noise_sum(outcome, attempt)
        && let Some(plain_stats) = BitStats::of(&plain)
    {
        groups.push(BitGroup {
            heading: "A plain number in the same format: the public sum Σê_s".into(),
            rows: vec![("Σê_s".into(), plain)],
            caption: plain_stats.sentence(),
        });
    }
    let shown = if outcome.params.dimension > MAX_ELEMENTS {
        format!(" (first {MAX_ELEMENTS} of {} coordinates)", outcome.params.dimension)
    } else {
        String::new()
    };
    Some(BitImageSpec {
        title: format!("Round {}: the masked vectors, bit by bit{shown}", round.number),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::mean::fixtures::simulated;

    #[test]
    fn uniform_words_look_uniform_and_small_numbers_do_not() {
        let mut rng = derive(3, "t");
        let uniform: Vec<u64> = (0..500).map(|_| rand_core::Rng::next_u64(&mut rng)).collect();
        let s = BitStats::of(&uniform).unwrap();
        assert!(s.z.abs() < 5.0 && s.p_value > 1e-6, "{s:?}");
        // independent expectation: 2 − 2⁻⁶³; the sd of the mean of 500 runs is √2/√500 ≈ 0.063
        assert!((s.leading_run - 2.0).abs() < 5.0 * 0.0633, "{s:?}");
        let small: Vec<u64> = [5u64, 300, (-7i64) as u64, 1 << 20].to_vec();
        let p = BitStats::of(&small).unwrap();
        assert!(p.leading_run > 40.0, "{p:?}");
        assert_eq!(p.ones, 2 + 4 + 62 + 1);
        assert_eq!(BitStats::of(&[]), None);
    }

    #[test]
    fn the_image_shows_every_masked_input_and_the_plain_sum() {
        let round = simulated(4, false, None);
        let spec = bit_image(&round).unwrap();
        assert_eq!(spec.groups.len(), 2);
        assert_eq!(spec.groups[0].rows.len(), 4);
        assert!(spec.title.contains("first 2 of 400"));
        // the plain sum decodes back to the broadcast sum: the core's encoder, exactly
        let attempt = shown_attempt(&round.outcome).unwrap();
        let ring = plain_noise_sum(&round.outcome, attempt).unwrap();
        let decoded = round.outcome.noise.format.decode_vec(&ring);
        assert_eq!(&decoded, attempt.noise_sum.as_ref().unwrap());
        // masked words pass for uniform; the plain sum does not
        let masked: Vec<u64> = attempt.masked_inputs.iter().flat_map(|m| m.ring.clone()).collect();
        assert!(BitStats::of(&masked).unwrap().leading_run < 3.0);
        assert!(BitStats::of(&ring).unwrap().leading_run > 20.0);
    }
}
