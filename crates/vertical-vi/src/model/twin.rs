//! The synthetic twin (spec B6 [choice], after twinify): draw θ ~ q once (seeded), then per record
//! z ~ Cat(π) and each feature from component z; a Beta value is mapped back to its column with the
//! **public** bounds, a category to its label. Given a shared z, each party could sample its own
//! columns; here one sampler produces all parties' blocks.
//!
//! Unit scale ↔ column value ([`to_unit`], [`from_unit`]): u = (x − lo)/(hi − lo), or with `log`,
//! u = (ln x − ln lo)/(ln hi − ln lo) (bounds in the column's own units), clamped to
//! [UNIT_CLAMP, 1 − UNIT_CLAMP] (spec D8).

use super::gradient::draw_eta;
use super::params::Model;
use super::train::Posterior;
use crate::schema::{Cell, FeatureKind, PartyBlock, Schema, UNIT_CLAMP};
use capelab_core::rng::CapeRng;
use rand::RngExt;
use rand_distr::{Beta, Distribution};

/// A column value → the unit scale (clamped), for a Beta feature.
pub fn to_unit(lo: f64, hi: f64, log: bool, x: f64) -> f64 {
    let u = if log { (x.ln() - lo.ln()) / (hi.ln() - lo.ln()) } else { (x - lo) / (hi - lo) };
    u.clamp(UNIT_CLAMP, 1.0 - UNIT_CLAMP)
}

/// The unit scale → a column value, the inverse of [`to_unit`] inside the clamp.
pub fn from_unit(lo: f64, hi: f64, log: bool, u: f64) -> f64 {
    if log { (lo.ln() + u * (hi.ln() - lo.ln())).exp() } else { lo + u * (hi - lo) }
}

/// Draw from a probability vector.
fn categorical(p: &[f64], rng: &mut CapeRng) -> usize {
    let u: f64 = rng.random::<f64>();
    let mut acc = 0.0;
    for (i, v) in p.iter().enumerate() {
        acc += v;
        if u < acc {
            return i;
        }
    }
    p.len() - 1
}

/// `rows` records from the mixture at a fixed θ: one encoded block per party.
pub fn sample_from_theta(
    model: &Model,
    theta: &[f64],
    rows: usize,
    rng: &mut CapeRng,
) -> Vec<PartyBlock> {
    let k = model.components;
    let parties = &model.schema.parties;
    let mut blocks: Vec<PartyBlock> = parties
        .iter()
        .map(|p| PartyBlock {
            rows,
            features: p.features.len(),
            cells: Vec::with_capacity(rows * p.features.len()),
        })
        .collect();
    let betas: Vec<Vec<Option<Beta<f64>>>> = (0..parties.len())
        .map(|p| {
            let w = model.party_width(p);
            let base = model.party_theta_offset(p);
            (0..k)
                .flat_map(|c| {
                    let mut at = base + c * w;
                    parties[p].features.iter().map(move |f| match &f.kind {
                        FeatureKind::Beta { .. } => {
                            let d = Beta::new(theta[at], theta[at + 1]).expect("a, b > 0");
                            at += 2;
                            Some(d)
                        }
                        FeatureKind::Categorical { labels } => {
                            at += labels.len();
                            None
                        }
                    })
                })
                .collect()
        })
        .collect();
    for _ in 0..rows {
        let z = categorical(&theta[..k], rng);
        for (p, party) in parties.iter().enumerate() {
            let w = model.party_width(p);
            let mut at = model.party_theta_offset(p) + z * w;
            for (j, f) in party.features.iter().enumerate() {
                let cell = match &f.kind {
                    FeatureKind::Beta { .. } => {
                        at += 2;
                        let d = betas[p][z * party.features.len() + j].as_ref().expect("a Beta");
                        Cell::Unit(d.sample(rng).clamp(UNIT_CLAMP, 1.0 - UNIT_CLAMP))
                    }
                    FeatureKind::Categorical { labels } => {
                        let c = categorical(&theta[at..at + labels.len()], rng);
                        at += labels.len();
                        Cell::Category(c as u32)
                    }
                };
                blocks[p].cells.push(cell);
            }
        }
    }
    blocks
}

impl Posterior {
    /// The twin: θ = T(μ + σ⊙η) for one η drawn from `rng`, then `rows` records from it.
    pub fn sample_twin(&self, rows: usize, rng: &mut CapeRng) -> Vec<PartyBlock> {
        let eta = draw_eta(&self.model, rng);
        let theta = self.model.transform(&self.q.zeta(&eta));
        sample_from_theta(&self.model, &theta, rows, rng)
    }
}

/// One party's table as strings: its header (column names) and its rows, ready for CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct TextTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl TextTable {
    /// Comma-separated text with a header line (labels containing commas or quotes are quoted).
    pub fn to_csv(&self) -> String {
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            out.push_str(&line.iter().map(|s| field(s)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}

/// The parties' tables side by side: every party's columns, one row per record (the twin as one
/// CSV, as the CLI writes it and a browser party tab downloads it).
pub fn join(tables: &[TextTable]) -> TextTable {
    let rows = tables.iter().map(|t| t.rows.len()).max().unwrap_or(0);
    let mut joined = TextTable {
        header: tables.iter().flat_map(|t| t.header.clone()).collect(),
        rows: vec![Vec::new(); rows],
    };
    for t in tables {
        for (out, r) in joined.rows.iter_mut().zip(&t.rows) {
            out.extend(r.iter().cloned());
        }
    }
    joined
}

/// Decode encoded blocks back to column values: Beta via [`from_unit`], Categorical to its label.
pub fn decode(schema: &Schema, blocks: &[PartyBlock]) -> Vec<TextTable> {
    schema
        .parties
        .iter()
        .zip(blocks)
        .map(|(party, block)| TextTable {
            header: party.features.iter().map(|f| f.name.clone()).collect(),
            rows: (0..block.rows)
                .map(|n| {
                    party
                        .features
                        .iter()
                        .zip(block.row(n))
                        .map(|(f, cell)| match (&f.kind, *cell) {
                            (FeatureKind::Beta { lo, hi, log }, Cell::Unit(u)) => {
                                format!("{}", from_unit(*lo, *hi, *log, u))
                            }
                            (FeatureKind::Categorical { labels }, Cell::Category(c)) => {
                                labels[c as usize].clone()
                            }
                            _ => panic!("cell does not match its feature kind"),
                        })
                        .collect()
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_scale_roundtrips_and_clamps() {
        for &(lo, hi, log) in &[(17.0, 90.0, false), (1.0, 1e6, true)] {
            for &x in &[lo * 1.5, (lo + hi) / 2.0, hi * 0.9] {
                let back = from_unit(lo, hi, log, to_unit(lo, hi, log, x));
                assert!((back - x).abs() < 1e-9 * x.abs(), "{x} → {back}");
            }
            assert_eq!(to_unit(lo, hi, log, lo), UNIT_CLAMP);
            assert_eq!(to_unit(lo, hi, log, hi * 2.0), 1.0 - UNIT_CLAMP);
        }
        assert!((from_unit(1.0, 100.0, true, 0.5) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn csv_quotes_fields_with_commas() {
        let t = TextTable {
            header: vec!["a".into(), "b".into()],
            rows: vec![vec!["x,y".into(), "1".into()]],
        };
        assert_eq!(t.to_csv(), "a,b\n\"x,y\",1\n");
    }

    #[test]
    fn join_puts_the_parties_columns_side_by_side() {
        let a =
            TextTable { header: vec!["a".into()], rows: vec![vec!["1".into()], vec!["2".into()]] };
        let b =
            TextTable { header: vec!["b".into()], rows: vec![vec!["x".into()], vec!["y".into()]] };
        assert_eq!(join(&[a, b]).to_csv(), "a,b\n1,x\n2,y\n");
    }
}
