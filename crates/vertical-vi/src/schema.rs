//! The public description of a vertically partitioned table (spec B1, B2, D8): which party holds
//! which columns, and how each column is modelled. Bounds and category lists are **public** (the
//! dashboard announces them): bounds derived from the data would leak it.

use serde::{Deserialize, Serialize};

/// A Beta input is clamped into `[UNIT_CLAMP, 1 − UNIT_CLAMP]`: at 0 and 1 its log-density is
/// infinite (spec D8).
pub const UNIT_CLAMP: f64 = 1e-6;

/// How one column is modelled inside a mixture component.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FeatureKind {
    /// A continuous column, rescaled from the public `[lo, hi]` (after `ln` when `log` is set)
    /// into the unit interval and modelled by a Beta(a, b).
    Beta { lo: f64, hi: f64, log: bool },
    /// A discrete (or binned) column with public labels, modelled by a Categorical(ω).
    Categorical { labels: Vec<String> },
}

impl FeatureKind {
    /// How many parameters this feature has per mixture component (d in D = K(1 + Σ_p d_p)).
    pub fn parameters(&self) -> usize {
        match self {
            FeatureKind::Beta { .. } => 2,
            FeatureKind::Categorical { labels } => labels.len(),
        }
    }
}

/// One column: its name as in the party's CSV header, and its model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    pub name: String,
    pub kind: FeatureKind,
}

/// The columns one party holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartySchema {
    pub name: String,
    pub features: Vec<Feature>,
}

impl PartySchema {
    /// d_p: this party's parameters per mixture component.
    pub fn parameters(&self) -> usize {
        self.features.iter().map(|f| f.kind.parameters()).sum()
    }

    /// e_p: this party's unconstrained (ζ) parameters per mixture component, 2 per Beta and L − 1
    /// per Categorical (softmax with the last logit fixed): the width of its `dlog`
    /// ([`crate::batch::PartyLocal`]), so the MPC's shape.
    pub fn zeta_parameters(&self) -> usize {
        self.features
            .iter()
            .map(|f| match &f.kind {
                FeatureKind::Beta { .. } => 2,
                FeatureKind::Categorical { labels } => labels.len() - 1,
            })
            .sum()
    }
}

/// The whole table's public description, party by party.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    pub parties: Vec<PartySchema>,
}

impl Schema {
    /// (K − 1) + K·Σ_p e_p: the length of one per-example gradient as the MPC computes and clips
    /// it, in the unconstrained parameters (batch.rs).
    pub fn zeta_gradient_len(&self, components: usize) -> usize {
        components.saturating_sub(1)
            + components * self.parties.iter().map(PartySchema::zeta_parameters).sum::<usize>()
    }

    /// D = K(1 + Σ_p d_p): the length of θ, the paper's per-example gradient (spec B3 step 3).
    pub fn gradient_len(&self, components: usize) -> usize {
        components * (1 + self.parties.iter().map(PartySchema::parameters).sum::<usize>())
    }
}

/// One encoded value of a party's table: a Beta input already in `[UNIT_CLAMP, 1 − UNIT_CLAMP]`,
/// or a category index.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Cell {
    Unit(f64),
    Category(u32),
}

/// One party's encoded columns, row-major: `cells[row * features + j]`. Rows are aligned by
/// position across parties (record linkage is out of scope, spec B1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyBlock {
    pub rows: usize,
    pub features: usize,
    pub cells: Vec<Cell>,
}

impl PartyBlock {
    pub fn row(&self, n: usize) -> &[Cell] {
        &self.cells[n * self.features..(n + 1) * self.features]
    }
}
