//! q_NGI, component matching and principal cosines (spec §6 metric, §9.6) against hand-computed
//! values and constructions whose answer is known.

use capelab_core::ica_quality::{match_components, principal_cosines, q_ngi};
use nalgebra::DMatrix;

/// A scaled permutation: row i has its only non-zero entry in column perm[i].
fn scaled_permutation(perm: &[usize], scales: &[f64]) -> DMatrix<f64> {
    let r = perm.len();
    let mut p = DMatrix::zeros(r, r);
    for (i, (&j, &s)) in perm.iter().zip(scales).enumerate() {
        p[(i, j)] = s;
    }
    p
}

#[test]
fn q_is_zero_exactly_for_scaled_permutations() {
    let p = scaled_permutation(&[2, 0, 3, 1], &[3.0, -0.5, 1e-3, -70.0]);
    assert_eq!(q_ngi(&p), 0.0);
    assert_eq!(q_ngi(&DMatrix::identity(5, 5)), 0.0);
}

#[test]
fn q_matches_hand_computed_examples() {
    // 2×2: rows give 0.5 and 0.25, columns 0.25 and 0.5; 1.5/(2·2·1) = 0.375.
    let p = DMatrix::from_row_slice(2, 2, &[1.0, 0.5, 0.25, 1.0]);
    assert!((q_ngi(&p) - 0.375).abs() < 1e-15);
    // 3×3: rows 0.5 + 0.5 + 0.125, columns 0.25 + 1 + 0.125; 2.5/(2·3·2) = 5/24.
    let p = DMatrix::from_row_slice(3, 3, &[2.0, 1.0, 0.0, 0.0, -1.0, 0.5, 0.5, 0.0, 4.0]);
    assert!((q_ngi(&p) - 5.0 / 24.0).abs() < 1e-15);
    // All-equal magnitudes are the worst case, q = 1.
    assert!((q_ngi(&DMatrix::from_element(4, 4, -2.0)) - 1.0).abs() < 1e-15);
}

#[test]
fn q_is_invariant_to_signed_permutations_and_global_scale_and_degenerate_input_is_worst() {
    // (Not to scaling single rows: that changes the column ratios.)
    let p = DMatrix::from_row_slice(3, 3, &[2.0, 1.0, 0.0, 0.0, -1.0, 0.5, 0.5, 0.0, 4.0]);
    let rows = scaled_permutation(&[1, 2, 0], &[1.0, -1.0, -1.0]);
    let cols = scaled_permutation(&[2, 0, 1], &[-1.0, 1.0, 1.0]);
    let q = q_ngi(&p);
    assert!((q_ngi(&(&rows * &p * &cols)) - q).abs() < 1e-15);
    assert!((q_ngi(&(&p * -7.5)) - q).abs() < 1e-15);
    assert_eq!(q_ngi(&DMatrix::zeros(3, 3)), 1.0);
    let mut nan = DMatrix::identity(3, 3);
    nan[(1, 2)] = f64::NAN;
    assert_eq!(q_ngi(&nan), 1.0);
}

#[test]
fn matching_recovers_a_noisy_signed_permutation() {
    let perm = [3, 0, 4, 1, 2];
    let mut p = scaled_permutation(&perm, &[2.0, -1.0, 0.7, -3.0, 1.5]);
    // Cross-talk smaller than each row's main entry, arranged so that a greedy column-first
    // choice would be tempted: row 0 also loads on column 0 at 0.9 of its main entry.
    p[(0, 0)] = 1.8;
    p[(2, 1)] = 0.3;
    let m = match_components(&p);
    assert_eq!(m.true_index, perm.to_vec());
    assert_eq!(m.sign, vec![1.0, -1.0, 1.0, -1.0, 1.0]);
    assert!(m.strength.iter().all(|&s| s > 0.7 && s <= 1.0));
}

#[test]
fn principal_cosines_of_known_subspaces() {
    // span(e1, e2) against span(e1, cos θ e2 + sin θ e3): cosines 1 and cos θ.
    let theta: f64 = 0.3;
    let mut a = DMatrix::zeros(4, 2);
    a[(0, 0)] = 1.0;
    a[(1, 1)] = 1.0;
    let mut b = DMatrix::zeros(4, 2);
    b[(0, 0)] = 3.0; // scaling and mixing the columns must not matter
    b[(0, 1)] = 1.0;
    b[(1, 1)] = theta.cos();
    b[(2, 1)] = theta.sin();
    let c = principal_cosines(&a, &b);
    assert!((c[0] - 1.0).abs() < 1e-12 && (c[1] - theta.cos()).abs() < 1e-12, "{c:?}");
    // An orthogonal complement: all cosines 0.
    let mut e = DMatrix::zeros(4, 2);
    e[(2, 0)] = 1.0;
    e[(3, 1)] = 1.0;
    assert!(principal_cosines(&a, &e).iter().all(|&v| v.abs() < 1e-12));
}
