//! The orthonormal polynomial system {e_k} on D = [−1, 1]^m that the masks multiply
//! (spec efpsn-vertical-dpvi §A2, "Function class").
//!
//! Every agent must build the same basis, or the masks stop cancelling (spec §D pitfall 6): the
//! monomials, their order and the variables are fixed by a [`BasisSpec`] whose seed is public and
//! shared by all agents. Gram–Schmidt runs on the exact inner products of monomials,
//! ∫_{−1}^{1} x^a dx = 2/(a+1) for even a and 0 for odd a, multiplied across variables.

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::EfpsnError;
use crate::rng::derive;

/// The public choice of a basis: (K_deg, m, N_b) and the seed that picks the N_b monomials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasisSpec {
    /// Largest total degree K_deg of a monomial.
    pub max_degree: u32,
    /// The number m of perturbed decision variables.
    pub variables: u32,
    /// The number N_b of basis functions (= K_c + 1 mask coefficients per agent).
    pub size: u32,
    /// The public seed that picks and orders the monomials.
    pub seed: u64,
}

impl BasisSpec {
    /// The paper's choice for MNIST: (K_deg, m, N_b) = (1, 10, 10), so Φ is affine.
    pub fn paper_mnist(seed: u64) -> Self {
        BasisSpec { max_degree: 1, variables: 10, size: 10, seed }
    }

    /// C(m + K_deg, K_deg), the number of monomials of total degree ≤ K_deg in m variables,
    /// saturating at `u64::MAX`.
    pub fn monomial_count(&self) -> u64 {
        let (m, k) = (self.variables as u64, self.max_degree as u64);
        let mut c: u64 = 1;
        for i in 1..=k {
            // C(m+i, i) = C(m+i−1, i−1)·(m+i)/i, exact at every step.
            c = match c.checked_mul(m + i) {
                Some(v) => v / i,
                None => return u64::MAX,
            };
        }
        c
    }

    fn check(&self) -> Result<(), EfpsnError> {
        if self.variables == 0 || self.size == 0 {
            return Err(EfpsnError::Basis("m and N_b must be at least 1".into()));
        }
        if u64::from(self.size) > self.monomial_count() {
            return Err(EfpsnError::Basis(format!(
                "N_b = {} but only {} monomials have degree ≤ {} in {} variables",
                self.size,
                self.monomial_count(),
                self.max_degree,
                self.variables
            )));
        }
        if self.size > MAX_SIZE {
            return Err(EfpsnError::Basis(format!(
                "N_b = {} is over capelab's limit of {MAX_SIZE} basis functions",
                self.size
            )));
        }
        Ok(())
    }
}

/// Gram–Schmidt is quadratic in N_b and each agent sends N_b ciphertexts per neighbour.
pub const MAX_SIZE: u32 = 4096;

/// A monomial ∏ x_v^{a_v}, stored sparsely as (variable, exponent) pairs with exponent ≥ 1,
/// ordered by variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Monomial(pub Vec<(u32, u32)>);

impl Monomial {
    pub fn one() -> Self {
        Monomial(Vec::new())
    }

    /// Builds x_{v1}^{a1}·x_{v2}^{a2}… from (variable, exponent) pairs (0-based variables).
    pub fn new(mut powers: Vec<(u32, u32)>) -> Self {
        powers.retain(|&(_, a)| a > 0);
        powers.sort_unstable();
        Monomial(powers)
    }

    pub fn degree(&self) -> u32 {
        self.0.iter().map(|&(_, a)| a).sum()
    }

    /// ∫_D u·v over D = [−1, 1]^m, exactly (up to the final rounding).
    pub fn inner(&self, other: &Monomial, variables: u32) -> f64 {
        let mut exps: Vec<(u32, u32)> = self.0.clone();
        for &(v, a) in &other.0 {
            match exps.iter_mut().find(|(w, _)| *w == v) {
                Some((_, b)) => *b += a,
                None => exps.push((v, a)),
            }
        }
        if exps.iter().any(|&(_, a)| a % 2 == 1) {
            return 0.0;
        }
        // Variables absent from the product integrate to 2 each.
        let absent = variables as i32 - exps.len() as i32;
        let mut value = 2f64.powi(absent);
        for &(_, a) in &exps {
            value *= 2.0 / (a as f64 + 1.0);
        }
        value
    }

    pub fn eval(&self, x: &[f64]) -> f64 {
        self.0.iter().map(|&(v, a)| x[v as usize].powi(a as i32)).product()
    }

    /// ∂/∂x_v at x.
    pub fn derivative(&self, v: u32, x: &[f64]) -> f64 {
        let Some(&(_, a)) = self.0.iter().find(|&&(w, _)| w == v) else {
            return 0.0;
        };
        let rest: f64 = self
            .0
            .iter()
            .filter(|&&(w, _)| w != v)
            .map(|&(w, b)| x[w as usize].powi(b as i32))
            .product();
        a as f64 * x[v as usize].powi(a as i32 - 1) * rest
    }
}

impl std::fmt::Display for Monomial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("1");
        }
        for (i, &(v, a)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("·")?;
            }
            write!(f, "x{}", v + 1)?;
            if a > 1 {
                write!(f, "^{a}")?;
            }
        }
        Ok(())
    }
}

/// A polynomial Σ_a c_a·u_a over monomials u_a.
#[derive(Clone, Debug, PartialEq)]
pub struct Polynomial {
    pub variables: u32,
    pub terms: Vec<(Monomial, f64)>,
}

impl Polynomial {
    pub fn eval(&self, x: &[f64]) -> f64 {
        self.terms.iter().map(|(u, c)| c * u.eval(x)).sum()
    }

    /// The gradient in the m variables at x.
    pub fn gradient(&self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.variables as usize];
        self.add_gradient(x, |v, g| out[v] += g);
        out
    }

    /// Calls `add(v, ∂/∂x_v)` for every term's contribution: one pass over the terms, so an
    /// affine Φ in 650 variables costs 650 calls, not 650².
    pub fn add_gradient(&self, x: &[f64], mut add: impl FnMut(usize, f64)) {
        for (u, c) in &self.terms {
            for &(v, _) in &u.0 {
                add(v as usize, c * u.derivative(v, x));
            }
        }
    }

    /// The coefficient of monomial `u` (0 when absent).
    pub fn coefficient(&self, u: &Monomial) -> f64 {
        self.terms.iter().filter(|(w, _)| w == u).map(|(_, c)| c).sum()
    }
}

/// The orthonormal system e_0 … e_{N_b − 1}, each a combination of the picked monomials.
#[derive(Clone, Debug)]
pub struct Basis {
    variables: u32,
    monomials: Vec<Monomial>,
    /// Row k: e_k's coefficients on `monomials` (lower triangular: e_k uses monomials 0..=k).
    coefficients: Vec<Vec<f64>>,
}

impl Basis {
    /// The basis a [`BasisSpec`] names: all monomials of degree ≤ K_deg in graded order,
    /// shuffled by the public seed, the first N_b kept, then Gram–Schmidt in that order.
    pub fn build(spec: &BasisSpec) -> Result<Self, EfpsnError> {
        spec.check()?;
        let mut all = all_monomials(spec.variables, spec.max_degree, spec.size as usize)?;
        let mut rng = derive(spec.seed, "efpsn/basis");
        all.shuffle(&mut rng);
        all.truncate(spec.size as usize);
        Self::from_monomials(spec.variables, all)
    }

    /// Gram–Schmidt on `monomials` in the given order (e.g. the paper's worked example).
    pub fn from_monomials(variables: u32, monomials: Vec<Monomial>) -> Result<Self, EfpsnError> {
        let n = monomials.len();
        if let Some(u) = monomials.iter().find(|u| u.0.iter().any(|&(v, _)| v >= variables)) {
            return Err(EfpsnError::Basis(format!(
                "monomial {u} uses a variable beyond x{variables}"
            )));
        }
        let gram: Vec<Vec<f64>> = (0..n)
            .map(|a| (0..n).map(|b| monomials[a].inner(&monomials[b], variables)).collect())
            .collect();
        let inner = |c: &[f64], d: &[f64]| -> f64 {
            let mut s = 0.0;
            for (a, &ca) in c.iter().enumerate() {
                if ca != 0.0 {
                    for (b, &db) in d.iter().enumerate() {
                        s += ca * gram[a][b] * db;
                    }
                }
            }
            s
        };
        let mut coefficients: Vec<Vec<f64>> = Vec::with_capacity(n);
        for k in 0..n {
            let mut c = vec![0.0; n];
            c[k] = 1.0;
            // Modified Gram–Schmidt, twice, for orthogonality to rounding.
            for _ in 0..2 {
                for e in &coefficients {
                    let proj = inner(&c, e);
                    for (ci, ei) in c.iter_mut().zip(e) {
                        *ci -= proj * ei;
                    }
                }
            }
            let norm = inner(&c, &c).sqrt();
            if norm.is_nan() || norm <= 1e-12 {
                return Err(EfpsnError::Basis(format!(
                    "monomial {} is linearly dependent on the ones before it",
                    monomials[k]
                )));
            }
            c.iter_mut().for_each(|ci| *ci /= norm);
            coefficients.push(c);
        }
        Ok(Basis { variables, monomials, coefficients })
    }

    pub fn len(&self) -> usize {
        self.monomials.len()
    }

    pub fn is_empty(&self) -> bool {
        self.monomials.is_empty()
    }

    pub fn variables(&self) -> u32 {
        self.variables
    }

    pub fn monomials(&self) -> &[Monomial] {
        &self.monomials
    }

    /// e_k as a polynomial.
    pub fn element(&self, k: usize) -> Polynomial {
        self.combine(&unit(self.len(), k))
    }

    /// Φ(η̄) = Σ_k η̄_k·e_k as a polynomial in the monomials.
    pub fn combine(&self, eta: &[f64]) -> Polynomial {
        assert_eq!(eta.len(), self.len(), "one coefficient per basis function");
        let mut totals = vec![0.0; self.len()];
        for (e, &w) in self.coefficients.iter().zip(eta) {
            for (t, c) in totals.iter_mut().zip(e) {
                *t += w * c;
            }
        }
        Polynomial {
            variables: self.variables,
            terms: self.monomials.iter().cloned().zip(totals).filter(|(_, c)| *c != 0.0).collect(),
        }
    }

    /// ∫_D e_j·e_k, for tests and for checking a basis received from elsewhere.
    pub fn inner(&self, j: usize, k: usize) -> f64 {
        let (a, b) = (&self.coefficients[j], &self.coefficients[k]);
        let mut s = 0.0;
        for (x, &ca) in a.iter().enumerate() {
            for (y, &cb) in b.iter().enumerate() {
                s += ca * cb * self.monomials[x].inner(&self.monomials[y], self.variables);
            }
        }
        s
    }
}

fn unit(n: usize, k: usize) -> Vec<f64> {
    let mut v = vec![0.0; n];
    v[k] = 1.0;
    v
}

/// Every monomial of total degree ≤ `max_degree` in `variables` variables, by degree then
/// lexicographically. Refuses lists over `MONOMIAL_LIMIT` (the spec's N_b is picked from them).
fn all_monomials(
    variables: u32,
    max_degree: u32,
    wanted: usize,
) -> Result<Vec<Monomial>, EfpsnError> {
    const MONOMIAL_LIMIT: u64 = 1 << 20;
    let count = BasisSpec { max_degree, variables, size: 1, seed: 0 }.monomial_count();
    if count > MONOMIAL_LIMIT {
        return Err(EfpsnError::Basis(format!(
            "{count} monomials of degree ≤ {max_degree} in {variables} variables: over the \
             {MONOMIAL_LIMIT} capelab enumerates to pick {wanted} from"
        )));
    }
    let mut out = vec![Monomial::one()];
    let mut layer: Vec<Vec<u32>> = vec![vec![]]; // exponent vectors as sorted variable lists
    for _ in 1..=max_degree {
        let mut next = Vec::new();
        for vars in &layer {
            let start = vars.last().copied().unwrap_or(0);
            for v in start..variables {
                let mut w = vars.clone();
                w.push(v);
                next.push(w);
            }
        }
        for vars in &next {
            let mut powers: Vec<(u32, u32)> = Vec::new();
            for &v in vars {
                match powers.last_mut() {
                    Some((w, a)) if *w == v => *a += 1,
                    _ => powers.push((v, 1)),
                }
            }
            out.push(Monomial(powers));
        }
        layer = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(v: u32, a: u32) -> (u32, u32) {
        (v - 1, a)
    }

    /// The paper's worked example (3, 2, 5) in the order 1, x₂, x₂³, x₁, x₁²x₂ (spec §A2).
    fn worked_example() -> Basis {
        let monomials = vec![
            Monomial::one(),
            Monomial::new(vec![x(2, 1)]),
            Monomial::new(vec![x(2, 3)]),
            Monomial::new(vec![x(1, 1)]),
            Monomial::new(vec![x(1, 2), x(2, 1)]),
        ];
        Basis::from_monomials(2, monomials).unwrap()
    }

    #[test]
    fn the_worked_example_basis_matches_the_paper() {
        let b = worked_example();
        let close = |a: f64, e: f64| (a - e).abs() < 1e-3;
        let m = |pairs: Vec<(u32, u32)>| {
            Monomial::new(pairs.into_iter().map(|(v, a)| x(v, a)).collect())
        };
        assert!(close(b.element(0).coefficient(&Monomial::one()), 0.5));
        assert!(close(b.element(1).coefficient(&m(vec![(2, 1)])), 0.866));
        assert!(close(b.element(2).coefficient(&m(vec![(2, 3)])), 3.307));
        assert!(close(b.element(2).coefficient(&m(vec![(2, 1)])), -1.984));
        assert!(close(b.element(3).coefficient(&m(vec![(1, 1)])), 0.866));
        assert!(close(b.element(4).coefficient(&m(vec![(1, 2), (2, 1)])), 2.905));
        assert!(close(b.element(4).coefficient(&m(vec![(2, 1)])), -0.968));
        // Exact values: √3/2, √7·5/4, √45/(2·√(4/5))…: the constant is exactly 1/√4.
        assert!((b.element(0).coefficient(&Monomial::one()) - 0.5).abs() < 1e-15);
    }

    /// The corrected test vector: 5.853x₁²x₂ − 1.237x₂³ + 0.7075x₁ − 0.665x₂ + 0.090 (the paper
    /// prints −2.137x₂³ and −1.310x₂, which contradict its own inputs).
    #[test]
    fn the_worked_example_sum_is_the_corrected_test_vector() {
        let b = worked_example();
        let phi = b.combine(&[0.180, 0.628, -0.374, 0.817, 2.015]);
        let m = |pairs: Vec<(u32, u32)>| {
            Monomial::new(pairs.into_iter().map(|(v, a)| x(v, a)).collect())
        };
        let expect = [
            (m(vec![(1, 2), (2, 1)]), 5.853),
            (m(vec![(2, 3)]), -1.237),
            (m(vec![(1, 1)]), 0.7075),
            (m(vec![(2, 1)]), -0.665),
            (Monomial::one(), 0.090),
        ];
        for (u, c) in expect {
            let got = phi.coefficient(&u);
            assert!((got - c).abs() < 1.5e-3, "{u}: {got} vs {c}");
        }
        assert_eq!(phi.terms.len(), 5);
    }

    #[test]
    fn built_bases_are_orthonormal_on_the_cube() {
        for spec in [
            BasisSpec { max_degree: 3, variables: 2, size: 10, seed: 1 },
            BasisSpec { max_degree: 4, variables: 3, size: 20, seed: 7 },
            BasisSpec::paper_mnist(3),
        ] {
            let b = Basis::build(&spec).unwrap();
            assert_eq!(b.len(), spec.size as usize);
            for j in 0..b.len() {
                for k in 0..b.len() {
                    let want = if j == k { 1.0 } else { 0.0 };
                    assert!((b.inner(j, k) - want).abs() < 1e-10, "{spec:?} <e{j},e{k}>");
                }
            }
        }
    }

    /// Monte Carlo check of the exact monomial integrals: the mean of e_j·e_k over uniform points
    /// of [−1, 1]^m is 2^{−m}·δ_jk.
    #[test]
    fn orthonormality_holds_by_monte_carlo() {
        use rand::RngExt;
        let b =
            Basis::build(&BasisSpec { max_degree: 3, variables: 2, size: 6, seed: 11 }).unwrap();
        let mut rng = derive(5, "test");
        let n = 400_000;
        let es: Vec<Polynomial> = (0..b.len()).map(|k| b.element(k)).collect();
        let mut acc = vec![vec![0.0; b.len()]; b.len()];
        for _ in 0..n {
            let p = [rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0)];
            let v: Vec<f64> = es.iter().map(|e| e.eval(&p)).collect();
            for (row, vj) in acc.iter_mut().zip(&v) {
                for (cell, vk) in row.iter_mut().zip(&v) {
                    *cell += vj * vk;
                }
            }
        }
        for (j, row) in acc.iter().enumerate() {
            for (k, total) in row.iter().enumerate() {
                let mean = total / n as f64 * 4.0; // volume of [−1,1]² is 4
                let want = if j == k { 1.0 } else { 0.0 };
                assert!((mean - want).abs() < 0.05, "<e{j},e{k}> ≈ {mean}");
            }
        }
    }

    #[test]
    fn every_seed_gives_the_same_basis_and_different_seeds_may_differ() {
        let spec = BasisSpec { max_degree: 2, variables: 3, size: 6, seed: 42 };
        let a = Basis::build(&spec).unwrap();
        let b = Basis::build(&spec).unwrap();
        assert_eq!(a.monomials(), b.monomials());
        assert_eq!(a.coefficients, b.coefficients);
        let others: Vec<_> = (0..8)
            .map(|s| Basis::build(&BasisSpec { seed: s, ..spec }).unwrap().monomials().to_vec())
            .collect();
        assert!(others.iter().any(|m| m != a.monomials()));
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let b =
            Basis::build(&BasisSpec { max_degree: 3, variables: 3, size: 12, seed: 2 }).unwrap();
        let eta: Vec<f64> = (0..12).map(|k| (k as f64 * 0.37).sin()).collect();
        let phi = b.combine(&eta);
        let p = [0.3, -0.4, 0.8];
        let g = phi.gradient(&p);
        for v in 0..3 {
            let h = 1e-6;
            let mut up = p;
            let mut down = p;
            up[v] += h;
            down[v] -= h;
            let fd = (phi.eval(&up) - phi.eval(&down)) / (2.0 * h);
            assert!((fd - g[v]).abs() < 1e-6, "∂/∂x{v}: {fd} vs {}", g[v]);
        }
    }

    #[test]
    fn bad_specs_are_refused_with_a_reason() {
        let too_many = BasisSpec { max_degree: 1, variables: 2, size: 4, seed: 0 };
        assert!(Basis::build(&too_many).unwrap_err().to_string().contains("only 3 monomials"));
        let zero = BasisSpec { max_degree: 1, variables: 0, size: 1, seed: 0 };
        assert!(Basis::build(&zero).is_err());
        assert_eq!(BasisSpec::paper_mnist(0).monomial_count(), 11);
        assert_eq!(
            BasisSpec { max_degree: 3, variables: 2, size: 1, seed: 0 }.monomial_count(),
            10
        );
    }
}
