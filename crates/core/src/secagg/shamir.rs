//! Shamir t-of-n secret sharing over the Ristretto255 scalar field (spec §3, "Concrete choices").
//!
//! A secret s is hidden as f(0) of a random polynomial f of degree t − 1; participant `id` holds
//! f(id + 1) (x = id + 1, so a participant id of 0 still gets a non-zero point). Any t shares give
//! s by Lagrange interpolation at 0; any t − 1 shares are consistent with every possible secret,
//! so they say nothing about it (perfect secrecy: see `t_minus_one_shares_fit_every_secret`).
//!
//! The field is the prime-order scalar field of Ristretto255 (ℓ ≈ 2^252), so the secret keys and
//! the self-mask seeds b_u, which are scalars, are shared as they are.

use curve25519_dalek::Scalar;

use super::crypto::random_scalar;
use crate::rng::CapeRng;
use crate::wire::ParticipantId;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShamirError {
    #[error("no shares given")]
    Empty,
    #[error("two shares come from participant {0}; each point must be distinct")]
    DuplicateHolder(ParticipantId),
}

/// The x-coordinate of participant `id`'s share.
pub fn x_of(id: ParticipantId) -> Scalar {
    Scalar::from(u64::from(id) + 1)
}

/// Splits `secret` into shares for `holders` (one each, in order) so that any `threshold` of them
/// reconstruct it.
pub fn split(
    secret: &Scalar,
    threshold: usize,
    holders: &[ParticipantId],
    rng: &mut CapeRng,
) -> Vec<Scalar> {
    let coefficients: Vec<Scalar> = (1..threshold.max(1)).map(|_| random_scalar(rng)).collect();
    split_with_coefficients(secret, &coefficients, holders)
}

/// f(x) = secret + c_1 x + … + c_{t−1} x^{t−1}, evaluated at every holder's x (Horner).
pub(crate) fn split_with_coefficients(
    secret: &Scalar,
    coefficients: &[Scalar],
    holders: &[ParticipantId],
) -> Vec<Scalar> {
    holders
        .iter()
        .map(|&id| {
            let x = x_of(id);
            coefficients.iter().rev().fold(Scalar::ZERO, |acc, c| (acc + c) * x) + secret
        })
        .collect()
}

/// The Lagrange weights λ_i with f(0) = Σ λ_i f(x_i), for the points of `holders`.
/// Reconstructing many secrets shared among the same holders reuses them.
pub fn lagrange_at_zero(holders: &[ParticipantId]) -> Result<Vec<Scalar>, ShamirError> {
    if holders.is_empty() {
        return Err(ShamirError::Empty);
    }
    let mut sorted = holders.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(ShamirError::DuplicateHolder(w[0]));
    }
    let xs: Vec<Scalar> = holders.iter().map(|&id| x_of(id)).collect();
    // λ_i = Π_{j≠i} x_j / (x_j − x_i); one batched inversion for all denominators.
    let mut numerators = Vec::with_capacity(xs.len());
    let mut denominators = Vec::with_capacity(xs.len());
    for (i, xi) in xs.iter().enumerate() {
        let mut num = Scalar::ONE;
        let mut den = Scalar::ONE;
        for (j, xj) in xs.iter().enumerate() {
            if i != j {
                num *= xj;
                den *= xj - xi;
            }
        }
        numerators.push(num);
        denominators.push(den);
    }
    Scalar::invert_batch_alloc(&mut denominators);
    Ok(numerators.iter().zip(&denominators).map(|(n, d)| n * d).collect())
}

/// Σ λ_i y_i: the secret, when `weights` come from [`lagrange_at_zero`] for the holders of `ys`.
pub fn combine(weights: &[Scalar], ys: &[Scalar]) -> Scalar {
    weights.iter().zip(ys).map(|(w, y)| w * y).sum()
}

/// Reconstructs a secret from `(holder, share)` pairs. With fewer than t shares the result is a
/// meaningless field element: the caller counts shares, this function cannot.
pub fn reconstruct(shares: &[(ParticipantId, Scalar)]) -> Result<Scalar, ShamirError> {
    let holders: Vec<ParticipantId> = shares.iter().map(|(id, _)| *id).collect();
    let ys: Vec<Scalar> = shares.iter().map(|(_, y)| *y).collect();
    Ok(combine(&lagrange_at_zero(&holders)?, &ys))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::derive;

    /// Every subset of size k of 0..n, as index lists.
    fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
        (0u32..1 << n)
            .filter(|m| m.count_ones() as usize == k)
            .map(|m| (0..n).filter(|i| m & (1 << i) != 0).collect())
            .collect()
    }

    #[test]
    fn any_t_of_n_shares_reconstruct_and_t_minus_one_do_not() {
        let mut rng = derive(1, "shamir");
        let holders: Vec<ParticipantId> = vec![2, 3, 5, 8, 13, 21, 34];
        let n = holders.len();
        for t in 1..=n {
            let secret = random_scalar(&mut rng);
            let shares = split(&secret, t, &holders, &mut rng);
            for subset in subsets(n, t) {
                let pts: Vec<_> = subset.iter().map(|&i| (holders[i], shares[i])).collect();
                assert_eq!(reconstruct(&pts).unwrap(), secret, "t = {t}, subset {subset:?}");
            }
            // more than t shares agree too
            let all: Vec<_> = holders.iter().copied().zip(shares.iter().copied()).collect();
            assert_eq!(reconstruct(&all).unwrap(), secret);
            if t > 1 {
                for subset in subsets(n, t - 1) {
                    let pts: Vec<_> = subset.iter().map(|&i| (holders[i], shares[i])).collect();
                    assert_ne!(reconstruct(&pts).unwrap(), secret, "t = {t}, subset {subset:?}");
                }
            }
        }
    }

    /// Perfect secrecy: for ANY candidate secret s', there are coefficients that give the very
    /// same t − 1 shares. Those coefficients are found by interpolating through (0, s') and the
    /// t − 1 observed points, and re-sharing s' with them reproduces the observation exactly.
    #[test]
    fn t_minus_one_shares_fit_every_secret() {
        let mut rng = derive(2, "shamir");
        let t = 4;
        let holders: Vec<ParticipantId> = vec![10, 11, 12, 13, 14];
        let secret = random_scalar(&mut rng);
        let shares = split(&secret, t, &holders, &mut rng);
        let seen = &holders[..t - 1];
        let observed = &shares[..t - 1];
        for candidate in [Scalar::ZERO, Scalar::ONE, secret, random_scalar(&mut rng)] {
            let coefficients = coefficients_through(candidate, seen, observed);
            assert_eq!(coefficients.len(), t - 1);
            let reshared = split_with_coefficients(&candidate, &coefficients, seen);
            assert_eq!(reshared, observed, "candidate secret fits the observed shares");
        }
    }

    /// The coefficients c_1..c_k of the degree-k polynomial through (0, s) and (x_i(ids), ys),
    /// by solving the Vandermonde system with Gaussian elimination over the field.
    fn coefficients_through(s: Scalar, ids: &[ParticipantId], ys: &[Scalar]) -> Vec<Scalar> {
        let k = ids.len();
        // rows: Σ_j c_j x_i^j = y_i − s, j = 1..k
        let mut m: Vec<Vec<Scalar>> = ids
            .iter()
            .zip(ys)
            .map(|(&id, y)| {
                let x = x_of(id);
                let mut row: Vec<Scalar> = Vec::with_capacity(k + 1);
                let mut p = x;
                for _ in 0..k {
                    row.push(p);
                    p *= x;
                }
                row.push(y - s);
                row
            })
            .collect();
        for col in 0..k {
            let pivot = (col..k).find(|&r| m[r][col] != Scalar::ZERO).expect("Vandermonde");
            m.swap(col, pivot);
            let inv = m[col][col].invert();
            let pivot_row: Vec<Scalar> = m[col].iter().map(|v| v * inv).collect();
            m[col] = pivot_row.clone();
            for (r, row) in m.iter_mut().enumerate() {
                if r != col {
                    let f = row[col];
                    for (a, b) in row.iter_mut().zip(&pivot_row) {
                        *a -= f * b;
                    }
                }
            }
        }
        m.iter().map(|row| row[k]).collect()
    }

    #[test]
    fn bad_share_sets_are_refused() {
        assert_eq!(reconstruct(&[]), Err(ShamirError::Empty));
        assert_eq!(
            reconstruct(&[(3, Scalar::ONE), (3, Scalar::ONE)]),
            Err(ShamirError::DuplicateHolder(3))
        );
        // participant 0 is a valid holder: its x is 1, not 0
        let mut rng = derive(3, "shamir");
        let secret = random_scalar(&mut rng);
        let shares = split(&secret, 2, &[0, 1], &mut rng);
        assert_ne!(shares[0], secret);
        assert_eq!(reconstruct(&[(0, shares[0]), (1, shares[1])]).unwrap(), secret);
    }
}
