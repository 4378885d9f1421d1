/*!
How good an ICA result is: the normalised gain index, component matching, and subspace recovery.

- [`q_ngi`]: the Moreau–Amari index of spec §6 on the global system P = W_est·A_eff (R×R). It is
  0 exactly when P is a scaled permutation (the sources are recovered up to order and scale) and
  at most 1; the spec calls q ≤ 0.1 usable.
- [`match_components`]: which true component each estimated one recovers, with its sign, for
  showing recovered maps next to the ground truth (an optimal assignment, not a greedy one).
- [`estimated_maps`], [`align_maps`]: the recovered spatial maps (D×R), lined up with the true
  ones by a [`ComponentMatch`].
- [`principal_cosines`]: the cosines of the principal angles between an estimated subspace (the
  capePCA output V_R) and the true one (span of A). Spec §9.6 asks for it with every run, because
  one lost direction already costs q ≈ 0.2.

None of these is private: they read the ground truth, which only a simulation has.
*/

use nalgebra::DMatrix;

/// The normalised gain index (Moreau–Amari inter-symbol interference) of a square global matrix
/// P = W_est·A_eff, as in spec §6 and `compute_isi.m`:
///
/// q = (1/(2R(R−1)))·[Σ_i(Σ_j |p_ij|/max_k |p_ik| − 1) + Σ_j(Σ_i |p_ij|/max_k |p_kj| − 1)].
///
/// Returns a value in [0, 1]. A zero row or column (the index is undefined there) and any
/// non-finite entry give 1, the worst value, rather than NaN.
///
/// # Panics
/// If `p` is not square or has fewer than 2 rows: callers build P from matrices they own.
pub fn q_ngi(p: &DMatrix<f64>) -> f64 {
    let r = p.nrows();
    assert!(
        p.ncols() == r && r >= 2,
        "q_NGI needs a square matrix of size at least 2, got {}×{}",
        p.nrows(),
        p.ncols()
    );
    if p.iter().any(|v| !v.is_finite()) {
        return 1.0;
    }
    let abs = p.abs();
    let mut total = 0.0;
    for i in 0..r {
        let row = abs.row(i);
        let max = row.max();
        if max == 0.0 {
            return 1.0;
        }
        total += row.sum() / max - 1.0;
    }
    for j in 0..r {
        let col = abs.column(j);
        let max = col.max();
        if max == 0.0 {
            return 1.0;
        }
        total += col.sum() / max - 1.0;
    }
    total / (2.0 * r as f64 * (r as f64 - 1.0))
}

/// Which true component each estimated component recovers.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentMatch {
    /// `true_index[i]`: the true component that estimated component i is assigned to.
    pub true_index: Vec<usize>,
    /// `sign[i]`: ±1, the sign that makes estimated component i agree with its true one.
    pub sign: Vec<f64>,
    /// `strength[i]`: |p_ij|/‖p_i‖₂ of the assigned pair, in [0, 1] (1 = a clean recovery).
    pub strength: Vec<f64>,
}

/// Matches estimated to true components from the global matrix P = W_est·A_eff (row i: how
/// estimated component i mixes the true sources).
///
/// Each row is normalised to unit length and the assignment maximising the total |p_ij| is found
/// exactly (Hungarian algorithm), so two estimates never claim the same true component.
///
/// # Panics
/// If `p` is not square.
pub fn match_components(p: &DMatrix<f64>) -> ComponentMatch {
    let r = p.nrows();
    assert_eq!(p.ncols(), r, "component matching needs a square matrix");
    let mut normalised = p.clone();
    for mut row in normalised.row_iter_mut() {
        let norm = row.norm();
        if norm > 0.0 && norm.is_finite() {
            row /= norm;
        } else {
            row.fill(0.0);
        }
    }
    let cost = normalised.map(|v| -v.abs());
    let assignment = min_cost_assignment(&cost);
    let sign =
        (0..r).map(|i| if normalised[(i, assignment[i])] < 0.0 { -1.0 } else { 1.0 }).collect();
    let strength = (0..r).map(|i| normalised[(i, assignment[i])].abs()).collect();
    ComponentMatch { true_index: assignment, sign, strength }
}

/// The estimated spatial maps, D×R: with estimated sources ŝ = U·x for the total unmixing
/// U = W·K (R×D), the maps are the columns of U⁺ (so x ≈ U⁺·ŝ). `None` if the SVD fails
/// (non-finite input).
pub fn estimated_maps(unmixing: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    if unmixing.iter().any(|v| !v.is_finite()) {
        return None;
    }
    unmixing.clone().pseudo_inverse(1e-12).ok()
}

/// Lines the estimated maps up with the true components for display: column j of the result
/// is the estimated map matched to true component j, sign-corrected and scaled to unit norm.
/// `matching` comes from [`match_components`] on the same run.
pub fn align_maps(maps: &DMatrix<f64>, matching: &ComponentMatch) -> DMatrix<f64> {
    let mut aligned = DMatrix::zeros(maps.nrows(), maps.ncols());
    for (i, (&j, &sign)) in matching.true_index.iter().zip(&matching.sign).enumerate() {
        let col = maps.column(i);
        let norm = col.norm();
        let scale = if norm > 0.0 { sign / norm } else { 0.0 };
        aligned.set_column(j, &(col * scale));
    }
    aligned
}

/// The cosines of the principal angles between span(`estimate`) and span(`truth`), largest
/// first (one per column of the narrower matrix). 1 means the direction is recovered exactly, 0
/// that it is missing. Neither input needs orthonormal columns: both are orthonormalised (thin QR)
/// first.
///
/// # Panics
/// If the two matrices have different numbers of rows.
pub fn principal_cosines(estimate: &DMatrix<f64>, truth: &DMatrix<f64>) -> Vec<f64> {
    assert_eq!(
        estimate.nrows(),
        truth.nrows(),
        "principal angles need subspaces of the same ambient dimension"
    );
    let qe = estimate.clone().qr().q();
    let qt = truth.clone().qr().q();
    let cross = qe.transpose() * qt;
    let mut cosines: Vec<f64> =
        cross.svd(false, false).singular_values.iter().map(|s| s.clamp(0.0, 1.0)).collect();
    cosines.sort_by(|a, b| b.total_cmp(a));
    cosines
}

/// Minimum-cost perfect assignment of rows to columns of a square cost matrix (Hungarian
/// algorithm with potentials, O(n³)). Returns, for each row, its column.
fn min_cost_assignment(cost: &DMatrix<f64>) -> Vec<usize> {
    let n = cost.nrows();
    // 1-based arrays as in the classical formulation; index 0 is the virtual start.
    let mut u = vec![0.0f64; n + 1];
    let mut v = vec![0.0f64; n + 1];
    let mut row_of_col = vec![0usize; n + 1];
    let mut way = vec![0usize; n + 1];
    for row in 1..=n {
        row_of_col[0] = row;
        let mut col0 = 0usize;
        let mut min_to = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[col0] = true;
            let i0 = row_of_col[col0];
            let mut delta = f64::INFINITY;
            let mut col1 = 0usize;
            for j in 1..=n {
                if !used[j] {
                    let reduced = cost[(i0 - 1, j - 1)] - u[i0] - v[j];
                    if reduced < min_to[j] {
                        min_to[j] = reduced;
                        way[j] = col0;
                    }
                    if min_to[j] < delta {
                        delta = min_to[j];
                        col1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[row_of_col[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_to[j] -= delta;
                }
            }
            col0 = col1;
            if row_of_col[col0] == 0 {
                break;
            }
        }
        loop {
            let col1 = way[col0];
            row_of_col[col0] = row_of_col[col1];
            col0 = col1;
            if col0 == 0 {
                break;
            }
        }
    }
    let mut col_of_row = vec![0usize; n];
    for j in 1..=n {
        if row_of_col[j] > 0 {
            col_of_row[row_of_col[j] - 1] = j - 1;
        }
    }
    col_of_row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_maps_recover_the_true_maps_from_a_signed_permuted_unmixing() {
        // True maps A (6×3, unit columns); an exact unmixing up to order, sign and scale:
        // U = D·P·A⁺, so the estimated maps are A·P⁻¹·D⁻¹.
        let a = DMatrix::from_fn(6, 3, |i, j| ((i * 5 + j * 7) % 11) as f64 - 4.0);
        let a = DMatrix::from_columns(&a.column_iter().map(|c| c.normalize()).collect::<Vec<_>>());
        let mut p = DMatrix::zeros(3, 3);
        p[(0, 2)] = -2.0;
        p[(1, 0)] = 0.5;
        p[(2, 1)] = 3.0;
        let unmixing = &p * a.clone().pseudo_inverse(1e-12).unwrap();
        let maps = estimated_maps(&unmixing).unwrap();
        let matching = match_components(&(&unmixing * &a));
        assert_eq!(matching.true_index, vec![2, 0, 1]);
        let aligned = align_maps(&maps, &matching);
        assert!((aligned - &a).amax() < 1e-10);
        assert!(estimated_maps(&DMatrix::from_element(2, 3, f64::NAN)).is_none());
    }

    #[test]
    fn assignment_matches_brute_force_on_a_small_matrix() {
        let cost = DMatrix::from_row_slice(
            4,
            4,
            &[9.0, 2.0, 7.0, 8.0, 6.0, 4.0, 3.0, 7.0, 5.0, 8.0, 1.0, 8.0, 7.0, 6.0, 9.0, 4.0],
        );
        let got = min_cost_assignment(&cost);
        let total = |perm: &[usize]| -> f64 { (0..4).map(|i| cost[(i, perm[i])]).sum() };
        let mut best = f64::INFINITY;
        let mut perm = [0usize, 1, 2, 3];
        permute_all(&mut perm, 0, &mut |p| best = best.min(total(p)));
        assert_eq!(total(&got), best);
        assert_eq!(best, 13.0);
    }

    fn permute_all(perm: &mut [usize], k: usize, visit: &mut dyn FnMut(&[usize])) {
        if k == perm.len() {
            visit(perm);
            return;
        }
        for i in k..perm.len() {
            perm.swap(k, i);
            permute_all(perm, k + 1, visit);
            perm.swap(k, i);
        }
    }
}
