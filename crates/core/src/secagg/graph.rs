/*!
Who masks with whom: the complete graph of Bonawitz et al. (2017) or the sparse graph of SecAgg+
(Bell, Bonawitz, Gascón, Lepoint, Raykova, CCS 2020), and the helper that picks SecAgg+'s degree k
and threshold t.

# The graph
[`Graph::Harary`] is the Harary graph H(n, k) for even k (every site is joined to the k/2
sites on either side of it around a cycle) laid over a random permutation of the invited sites,
so the k neighbours of a site are a uniformly random k-subset of the others. The permutation is a
Fisher–Yates shuffle of the sorted site list driven by [`crate::rng::derive`]`(seed,
"secagg/harary")`: every participant computes the same graph from the public `seed` in
[`Params`]. A site's *neighbourhood* N[u] is u and its k neighbours (k + 1 sites). u
Shamir-shares its two secrets among N[u] with threshold t, and masks its input with the pairwise
masks of its k neighbours only, so a site's keys, shares and masks number k + 1, not S.

The seed must be drawn after the set of sites is fixed, independently of who may drop out or be
corrupted (the aggregator draws it from its generator, [`Params::with_harary`]). The guarantees
below hold for such a graph; a party who could choose the seed to fit a coalition would get no
guarantee from this analysis (honest-but-curious model, as for the whole module).

# What [`choose_harary`] guarantees
Given S sites, a dropout fraction δ, a corruption fraction γ and σ, it returns the smallest even
k < S − 1 and the t in ((k+1)/2, k+1] for which the following bound on the failure probability
is at most 2^−σ, with D = ⌈δS⌉ sites that drop out (at any round) and C = ⌈γS⌉ sites that
collude with the aggregator, both sets fixed before the permutation is drawn:

1. *Dropouts.* For site u the number X of dropped sites among its k neighbours is hypergeometric
   (D dropped among the S − 1 others, k drawn). The aggregator can unmask if k − X ≥ t for every
   u (the worst case, where u itself dropped and holds no share for itself). P_drop = S · P[X ≥
   k − t + 1].
2. *Corruptions.* An honest u is exposed if t of its neighbours collude: they could rebuild both
   its self-mask seed and its mask key. Y ~ Hypergeometric(S − 1, C, k); P_corrupt = S · P[Y ≥ t].
3. *Connectivity.* The aggregator learns the sum of each connected component of the graph of
   honest surviving sites (the masks between two of them stay unknown to it). H(n, k) minus a
   set R of removed sites (dropped or colluding, |R| ≤ D + C) is connected unless R covers k/2
   consecutive places of the cycle in at least two spots; the places of R are a uniform random
   subset, so P_split ≤ S · C(D + C, k/2) / C(S, k/2) (one run of k/2, counted from each of the S
   places).

The bound is P_drop + P_corrupt + P_split (a union bound over the sites, computed numerically:
exact hypergeometric tails in log space, [`HararyChoice::failure_log2`] is its log₂). With
probability at least 1 − 2^−σ over the permutation: every surviving site's input is unmasked and
summed exactly when at most D sites drop out, and the aggregator together with at most C sites
learns nothing about the honest survivors' inputs beyond their sum. More dropouts than D are not
refused up front; the round ends with [`super::RoundError::TooFewNeighbours`] as soon as a
neighbourhood holds fewer than t live sites. t > (k + 1)/2 as on the complete graph (a site
reveals one kind of share per peer, and any two sets of t holders in N[u] meet).

This is our own union-bound computation for the parameters asked for, not a figure from Bell et
al.'s tables; like theirs, k grows like σ + log S, not like S. For small S (or large σ) no
k < S − 1 meets the bound and [`choose_harary`] says so: use the complete graph.
*/

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::config::Params;
use super::error::ConfigError;
use crate::rng::derive;
use crate::special::ln_binomial;
use crate::wire::ParticipantId;

/// Which pairs of sites share keys and masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Graph {
    /// Every site with every other (Bonawitz et al. 2017): t counts among all sites.
    #[default]
    Complete,
    /// SecAgg+: the Harary graph H(S, k) over the permutation of the sites drawn from `seed`;
    /// t counts within each neighbourhood of k + 1 sites. k is even, 2 ≤ k < S − 1.
    Harary { k: usize, seed: u64 },
}

/// The neighbourhoods of one instance's graph, computed once from its [`Params`].
#[derive(Clone, Debug)]
pub struct Topology {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Complete { sites: Vec<ParticipantId> },
    Ring { order: Vec<ParticipantId>, place: BTreeMap<ParticipantId, usize>, half: usize },
}

impl Topology {
    /// The graph `params` names (which must have passed [`Params::validate`]).
    pub fn new(params: &Params) -> Self {
        let kind = match params.graph {
            Graph::Complete => Kind::Complete { sites: params.sites.clone() },
            Graph::Harary { k, seed } => {
                let mut order = params.sites.clone();
                order.shuffle(&mut derive(seed, "secagg/harary"));
                let place = order.iter().enumerate().map(|(i, &s)| (s, i)).collect();
                Kind::Ring { order, place, half: k / 2 }
            }
        };
        Self { kind }
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.kind, Kind::Complete { .. })
    }

    /// |N[u]|: k + 1, or S on the complete graph.
    pub fn neighbourhood_size(&self) -> usize {
        match &self.kind {
            Kind::Complete { sites } => sites.len(),
            Kind::Ring { half, .. } => 2 * half + 1,
        }
    }

    /// N[u], u included, ascending; empty if u is not a site.
    pub fn neighbourhood(&self, u: ParticipantId) -> Vec<ParticipantId> {
        match &self.kind {
            Kind::Complete { sites } => {
                if sites.binary_search(&u).is_ok() {
                    sites.clone()
                } else {
                    Vec::new()
                }
            }
            Kind::Ring { order, place, half } => {
                let Some(&p) = place.get(&u) else { return Vec::new() };
                let n = order.len();
                let mut out: Vec<ParticipantId> =
                    (0..=2 * half).map(|d| order[(p + n + d - half) % n]).collect();
                out.sort_unstable();
                out
            }
        }
    }

    /// Whether v ∈ N[u] (so u ∈ N[v]); a site is its own neighbour.
    pub fn adjacent(&self, u: ParticipantId, v: ParticipantId) -> bool {
        match &self.kind {
            Kind::Complete { sites } => {
                sites.binary_search(&u).is_ok() && sites.binary_search(&v).is_ok()
            }
            Kind::Ring { order, place, half } => match (place.get(&u), place.get(&v)) {
                (Some(&a), Some(&b)) => {
                    let d = a.abs_diff(b);
                    d.min(order.len() - d) <= *half
                }
                _ => false,
            },
        }
    }
}

/// What [`choose_harary`] picked, and the bound it met.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HararyChoice {
    pub sites: usize,
    /// Neighbours per site (even).
    pub k: usize,
    /// Shamir threshold within each neighbourhood of k + 1 sites.
    pub threshold: usize,
    /// D = ⌈δS⌉ and C = ⌈γS⌉, the dropouts and colluders the bound covers (rounded up, so a
    /// small room still tolerates one of each when δ, γ > 0).
    pub dropouts: usize,
    pub corruptions: usize,
    /// log₂ of P_drop + P_corrupt + P_split (module docs); at most −σ.
    pub failure_log2: f64,
    pub drop_log2: f64,
    pub corrupt_log2: f64,
    pub split_log2: f64,
}

/// The smallest even k < S − 1 (and the best t for it) whose failure bound (module docs) is at
/// most 2^−σ for `sites` sites, a dropout fraction `dropout` and a corruption fraction
/// `corruption`. Errs when no such k exists: the complete graph is the option then.
pub fn choose_harary(
    sites: usize,
    dropout: f64,
    corruption: f64,
    sigma: f64,
) -> Result<HararyChoice, ConfigError> {
    let bad = |what: &'static str, value: f64| ConfigError::GraphParameter { what, value };
    if !(0.0..1.0).contains(&dropout) {
        return Err(bad("the dropout fraction δ must be in [0, 1)", dropout));
    }
    if !(0.0..1.0).contains(&corruption) {
        return Err(bad("the corruption fraction γ must be in [0, 1)", corruption));
    }
    if dropout + corruption >= 1.0 {
        return Err(bad("δ + γ must be below 1", dropout + corruption));
    }
    if !(sigma.is_finite() && sigma > 0.0) {
        return Err(bad("σ (failure probability 2^−σ) must be positive", sigma));
    }
    // ⌈fS⌉, forgiving the rounding of f (0.05 × 1000 is 50, not 51)
    let count = |f: f64| (f * sites as f64 - 1e-9).ceil().max(0.0) as usize;
    let (d, c) = (count(dropout), count(corruption));
    let mut k = 2;
    while k + 1 < sites {
        if let Some(choice) = best_threshold(sites, k, d, c)
            && choice.failure_log2 <= -sigma
        {
            return Ok(choice);
        }
        k += 2;
    }
    Err(ConfigError::NoSparseGraph { sites, dropout, corruption, sigma })
}

/// The bound of the module docs for one (S, k, t), as log₂ of each part.
pub fn failure_bound_log2(
    sites: usize,
    k: usize,
    t: usize,
    dropouts: usize,
    corruptions: usize,
) -> (f64, f64, f64) {
    let others = sites - 1;
    let ln_s = (sites as f64).ln();
    let drop = hypergeometric_pmf_ln(others, dropouts.min(others), k);
    let corrupt = hypergeometric_pmf_ln(others, corruptions.min(others), k);
    let drop_ln = ln_s + tail_ln(&drop, k + 1 - t);
    let corrupt_ln = ln_s + tail_ln(&corrupt, t);
    let split_ln = split_ln(sites, k / 2, dropouts + corruptions);
    let l2 = std::f64::consts::LN_2;
    (drop_ln / l2, corrupt_ln / l2, split_ln / l2)
}

fn best_threshold(sites: usize, k: usize, d: usize, c: usize) -> Option<HararyChoice> {
    let others = sites - 1;
    let drop = hypergeometric_pmf_ln(others, d.min(others), k);
    let corrupt = hypergeometric_pmf_ln(others, c.min(others), k);
    let ln_s = (sites as f64).ln();
    let split = split_ln(sites, k / 2, d + c);
    let l2 = std::f64::consts::LN_2;
    // k is even: 2t > k + 1 starts at t = k/2 + 1
    (k / 2 + 1..=k + 1)
        .map(|t| {
            let drop_ln = ln_s + tail_ln(&drop, k + 1 - t);
            let corrupt_ln = ln_s + tail_ln(&corrupt, t);
            let total = log_sum(&[drop_ln, corrupt_ln, split]);
            HararyChoice {
                sites,
                k,
                threshold: t,
                dropouts: d,
                corruptions: c,
                failure_log2: total / l2,
                drop_log2: drop_ln / l2,
                corrupt_log2: corrupt_ln / l2,
                split_log2: split / l2,
            }
        })
        .min_by(|a, b| a.failure_log2.total_cmp(&b.failure_log2))
}

/// ln P[X = x] for x = 0..=draws, X ~ Hypergeometric(population, successes, draws).
fn hypergeometric_pmf_ln(population: usize, successes: usize, draws: usize) -> Vec<f64> {
    let (n, m, k) = (population as f64, successes as f64, draws as f64);
    let total = ln_binomial(n, k);
    (0..=draws)
        .map(|x| {
            let x = x as f64;
            if x > m || k - x > n - m {
                f64::NEG_INFINITY
            } else {
                ln_binomial(m, x) + ln_binomial(n - m, k - x) - total
            }
        })
        .collect()
}

/// ln P[X ≥ from].
fn tail_ln(pmf_ln: &[f64], from: usize) -> f64 {
    log_sum(pmf_ln.get(from..).unwrap_or(&[]))
}

/// ln of S · C(removed, run) / C(S, run): some run of `run` consecutive places all removed.
fn split_ln(sites: usize, run: usize, removed: usize) -> f64 {
    if removed < run {
        return f64::NEG_INFINITY;
    }
    let (s, r, h) = (sites as f64, removed.min(sites) as f64, run as f64);
    (s.ln() + ln_binomial(r, h) - ln_binomial(s, h)).min(0.0)
}

fn log_sum(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secagg::config::Encoding;

    fn harary(s: u32, k: usize, seed: u64) -> Topology {
        let params = Params::new((1..=s).collect(), 1, Encoding::Ring)
            .unwrap()
            .with_graph(Graph::Harary { k, seed }, k / 2 + 1)
            .unwrap();
        Topology::new(&params)
    }

    #[test]
    fn harary_neighbourhoods_are_symmetric_of_size_k_plus_one() {
        for (s, k) in [(16u32, 4usize), (16, 14), (64, 10), (101, 20)] {
            let top = harary(s, k, 7);
            for u in 1..=s {
                let n = top.neighbourhood(u);
                assert_eq!(n.len(), k + 1, "S = {s}, k = {k}, u = {u}");
                assert!(n.contains(&u));
                for &v in &n {
                    assert!(top.adjacent(u, v) && top.adjacent(v, u));
                    assert!(top.neighbourhood(v).contains(&u));
                }
                let degree = (1..=s).filter(|&v| v != u && top.adjacent(u, v)).count();
                assert_eq!(degree, k);
            }
        }
        // a different seed, a different graph; the same seed, the same graph
        assert_ne!(harary(64, 6, 1).neighbourhood(1), harary(64, 6, 2).neighbourhood(1));
        assert_eq!(harary(64, 6, 1).neighbourhood(1), harary(64, 6, 1).neighbourhood(1));
    }

    #[test]
    fn hypergeometric_tails_match_a_direct_sum() {
        // X ~ Hyp(10, 4, 3): P[X ≥ 2] = (C(4,2)C(6,1) + C(4,3)) / C(10,3) = 40/120
        let pmf = hypergeometric_pmf_ln(10, 4, 3);
        assert!((tail_ln(&pmf, 2).exp() - 40.0 / 120.0).abs() < 1e-12);
        assert!((tail_ln(&pmf, 0).exp() - 1.0).abs() < 1e-12);
        assert_eq!(tail_ln(&pmf, 4), f64::NEG_INFINITY);
    }

    #[test]
    fn k_grows_like_log_s_and_small_rooms_get_the_complete_graph() {
        let ks: Vec<usize> = [100, 1_000, 10_000, 100_000]
            .iter()
            .map(|&s| choose_harary(s, 0.05, 0.05, 40.0).unwrap().k)
            .collect();
        // pinned: each tenfold S adds less (S = 100 gets a smaller k because its 10 removed
        // sites cannot cover more than 10 places of the cycle)
        assert_eq!(ks, [22, 36, 42, 46]);
        let c = choose_harary(1_000, 0.05, 0.05, 40.0).unwrap();
        assert!(c.failure_log2 <= -40.0 && 2 * c.threshold > c.k + 1 && c.threshold <= c.k + 1);
        let (d, cr, sp) = failure_bound_log2(1_000, c.k, c.threshold, 50, 50);
        assert!(
            (log_sum(&[d, cr, sp].map(|x| x * std::f64::consts::LN_2)) / std::f64::consts::LN_2
                - c.failure_log2)
                .abs()
                < 1e-9
        );
        // S = 16 at δ = γ = 0.05 still tolerates one of each (rounded up) with k = 6 ...
        let small = choose_harary(16, 0.05, 0.05, 40.0).unwrap();
        assert_eq!((small.k, small.threshold, small.dropouts, small.corruptions), (6, 4, 1, 1));
        // ... but not 4 + 4 with any k < 15: the complete graph it is
        let e = choose_harary(16, 0.2, 0.2, 40.0).unwrap_err();
        assert!(matches!(e, ConfigError::NoSparseGraph { sites: 16, .. }));
        assert!(e.to_string().contains("complete graph"), "{e}");
        assert!(matches!(
            choose_harary(100, 0.6, 0.5, 40.0),
            Err(ConfigError::GraphParameter { .. })
        ));
    }
}
