//! Per-column total-variation distance between a synthetic and a real table (spec B6 leaves the
//! evaluation open; this is ours).
//!
//! TV(P, Q) = ½ Σ |P(bin) − Q(bin)|: exact over labels for a Categorical, over [`TV_BINS`] equal
//! bins of the unit scale for a Beta column.

use crate::schema::{Cell, FeatureKind, PartyBlock, PartySchema};

/// Bins of the unit interval for a Beta column's TV.
pub const TV_BINS: usize = 20;

/// Column j's marginal as shares: one per label of a Categorical, one per [`TV_BINS`]th of the
/// unit scale for a Beta (also what the browser's party tab draws, real beside synthetic).
pub fn histogram(kind: &FeatureKind, block: &PartyBlock, j: usize) -> Vec<f64> {
    let bins = match kind {
        FeatureKind::Beta { .. } => TV_BINS,
        FeatureKind::Categorical { labels } => labels.len(),
    };
    let mut h = vec![0.0; bins];
    for n in 0..block.rows {
        let i = match block.row(n)[j] {
            Cell::Unit(u) => ((u * TV_BINS as f64) as usize).min(TV_BINS - 1),
            Cell::Category(c) => c as usize,
        };
        h[i] += 1.0;
    }
    let total = block.rows.max(1) as f64;
    h.iter_mut().for_each(|v| *v /= total);
    h
}

/// TV of column j between two blocks of the same party.
pub fn column_tv(kind: &FeatureKind, synthetic: &PartyBlock, real: &PartyBlock, j: usize) -> f64 {
    let (a, b) = (histogram(kind, synthetic, j), histogram(kind, real, j));
    0.5 * a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>()
}

/// TV of every column of one party, in schema order.
pub fn party_tv(party: &PartySchema, synthetic: &PartyBlock, real: &PartyBlock) -> Vec<f64> {
    party.features.iter().enumerate().map(|(j, f)| column_tv(&f.kind, synthetic, real, j)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tv_of_known_histograms() {
        let cat = FeatureKind::Categorical { labels: vec!["a".into(), "b".into()] };
        let block = |cells: Vec<Cell>| PartyBlock { rows: cells.len(), features: 1, cells };
        let a =
            block(vec![Cell::Category(0), Cell::Category(0), Cell::Category(1), Cell::Category(1)]);
        let b =
            block(vec![Cell::Category(0), Cell::Category(1), Cell::Category(1), Cell::Category(1)]);
        assert!((column_tv(&cat, &a, &b, 0) - 0.25).abs() < 1e-15);
        let beta = FeatureKind::Beta { lo: 0.0, hi: 1.0, log: false };
        let u = block(vec![Cell::Unit(0.01), Cell::Unit(0.99)]);
        let v = block(vec![Cell::Unit(0.02), Cell::Unit(0.5)]);
        assert!((column_tv(&beta, &u, &v, 0) - 0.5).abs() < 1e-15);
        assert_eq!(column_tv(&beta, &u, &u, 0), 0.0);
    }
}
