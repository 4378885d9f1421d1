//! A seeded Adult-like table with a known mixture truth (spec C: "a locally generated
//! Adult-schema table"), for tests and demos.
//!
//! Two parties: **demographic** (age: Beta on [17, 90]; education: 8 labels; sex: 2 labels) and
//! **financial** (hours per week: Beta on [1, 99]; income: 2 labels). The truth is a K = 3 mixture:
//! young low-earners, prime-age full-timers, older part-timers.

use super::params::Model;
use super::twin::sample_from_theta;
use crate::schema::{Feature, FeatureKind, PartyBlock, PartySchema, Schema};
use capelab_core::rng::derive;

/// Education labels, low to high.
pub const EDUCATION: [&str; 8] = [
    "Preschool-8th",
    "HS-grad",
    "Some-college",
    "Assoc",
    "Bachelors",
    "Masters",
    "Prof-school",
    "Doctorate",
];

/// The generated table and the truth it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    pub schema: Schema,
    pub blocks: Vec<PartyBlock>,
    /// The true model (K = 3) and θ in its layout.
    pub truth: Model,
    pub truth_theta: Vec<f64>,
}

/// The public schema of the Adult-like table.
pub fn adult_like_schema() -> Schema {
    let cat = |name: &str, labels: &[&str]| Feature {
        name: name.into(),
        kind: FeatureKind::Categorical { labels: labels.iter().map(|s| s.to_string()).collect() },
    };
    Schema {
        parties: vec![
            PartySchema {
                name: "demographic".into(),
                features: vec![
                    Feature {
                        name: "age".into(),
                        kind: FeatureKind::Beta { lo: 17.0, hi: 90.0, log: false },
                    },
                    cat("education", &EDUCATION),
                    cat("sex", &["Female", "Male"]),
                ],
            },
            PartySchema {
                name: "financial".into(),
                features: vec![
                    Feature {
                        name: "hours-per-week".into(),
                        kind: FeatureKind::Beta { lo: 1.0, hi: 99.0, log: false },
                    },
                    cat("income", &["<=50K", ">50K"]),
                ],
            },
        ],
    }
}

/// The truth θ (K = 3) in [`Model`]'s layout for [`adult_like_schema`].
pub fn adult_like_truth() -> (Model, Vec<f64>) {
    let model = Model::new(adult_like_schema(), 3);
    // per component: π, age (a, b), education ω, sex ω, hours (a, b), income ω
    let pi = [0.45, 0.35, 0.20];
    let age = [(2.0, 7.0), (6.0, 6.0), (8.0, 3.5)];
    let edu = [
        [0.15, 0.40, 0.30, 0.06, 0.07, 0.01, 0.005, 0.005],
        [0.03, 0.22, 0.18, 0.10, 0.27, 0.12, 0.05, 0.03],
        [0.20, 0.38, 0.16, 0.08, 0.10, 0.05, 0.02, 0.01],
    ];
    let sex = [[0.5, 0.5], [0.25, 0.75], [0.6, 0.4]];
    let hours = [(5.0, 9.0), (14.0, 15.0), (3.0, 8.0)];
    let income = [[0.95, 0.05], [0.45, 0.55], [0.75, 0.25]];
    let mut theta = pi.to_vec();
    for c in 0..3 {
        theta.extend([age[c].0, age[c].1]);
        theta.extend(edu[c]);
        theta.extend(sex[c]);
    }
    for c in 0..3 {
        theta.extend([hours[c].0, hours[c].1]);
        theta.extend(income[c]);
    }
    assert_eq!(theta.len(), model.theta_len());
    (model, theta)
}

/// `rows` records drawn from the truth with the stream `derive(seed, "vvi/generate")`.
pub fn adult_like(rows: usize, seed: u64) -> Generated {
    let (truth, truth_theta) = adult_like_truth();
    let mut rng = derive(seed, "vvi/generate");
    let blocks = sample_from_theta(&truth, &truth_theta, rows, &mut rng);
    Generated { schema: truth.schema.clone(), blocks, truth, truth_theta }
}
