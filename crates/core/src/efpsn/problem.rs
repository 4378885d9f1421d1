//! A learning problem split over the agents, with its held-out test rows and the centralised
//! minimiser x* that ‖x̄ − x*‖ is measured against (spec efpsn-vertical-dpvi §A4).

use super::EfpsnError;
use super::models::{Examples, LocalCost, Model, centralised_minimiser, evaluate};
use crate::data::synthetic;
use crate::data::{Dataset, parse_csv};

#[derive(Clone, Debug)]
pub struct Problem {
    pub model: Model,
    /// One private cost per agent.
    pub costs: Vec<LocalCost>,
    pub test: Examples,
    /// argmin (1/n) Σ_i f_i, computed centrally.
    pub x_star: Vec<f64>,
}

fn examples(d: &Dataset, scale: f64) -> Result<Examples, EfpsnError> {
    let mut x = Vec::with_capacity(d.len() * d.features());
    for r in 0..d.len() {
        x.extend(d.x.row(r).iter().map(|v| v / scale));
    }
    Examples::new(d.features(), x, d.y.as_slice().to_vec())
}

/// A labelled CSV (features and a `target` column of class numbers 0, 1, …, as `data/digits.csv`)
/// as a data set, with its number of classes.
pub fn labelled_csv(text: &str) -> Result<(Dataset, usize), EfpsnError> {
    let data = |e: &dyn std::fmt::Display| EfpsnError::Data(e.to_string());
    let table = parse_csv(text).map_err(|e| data(&e))?;
    let ft = table.features_and_target("target").map_err(|e| data(&e))?;
    if let Some(bad) = ft.target.iter().find(|y| !(y.fract() == 0.0 && **y >= 0.0 && **y < 1e4)) {
        return Err(EfpsnError::Data(format!("target {bad} is not a class number 0, 1, 2, …")));
    }
    let classes = ft.target.iter().fold(0.0f64, |m, &y| m.max(y)) as usize + 1;
    let set = Dataset::from_rows(&ft.features, &ft.target).map_err(|e| data(&e))?;
    Ok((set, classes))
}

/// The public split of a labelled data set: the seeded test rows, and the training rows dealt in
/// order into `agents` equal parts.
fn split_parts(
    data: &Dataset,
    agents: usize,
    test_fraction: f64,
    seed: u64,
) -> Result<(Vec<Dataset>, Dataset), EfpsnError> {
    let (train, test) =
        data.split(test_fraction, seed).map_err(|e| EfpsnError::Data(e.to_string()))?;
    let parts = train.partition(agents).map_err(|e| EfpsnError::Data(e.to_string()))?;
    Ok((parts, test))
}

/// How a labelled table becomes a softmax-regression problem over the agents: public, so every
/// agent derives its own part and the observer the test rows and x* the same way.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClassificationSplit {
    pub classes: usize,
    /// The public number of features (64 for digits): an agent's own table must have as many.
    pub features: usize,
    /// The public bound features are divided by (16 for digits' pixel counts).
    pub feature_bound: f64,
    pub ridge: f64,
    pub test_fraction: f64,
    pub seed: u64,
}

impl ClassificationSplit {
    fn check(&self) -> Result<(), EfpsnError> {
        if !(self.feature_bound > 0.0 && self.feature_bound.is_finite()) {
            return Err(EfpsnError::Parameter(format!(
                "feature bound {} must be positive",
                self.feature_bound
            )));
        }
        if !(self.ridge >= 0.0 && self.ridge.is_finite()) || self.classes < 2 {
            return Err(EfpsnError::Parameter(format!(
                "ridge {} (must be ≥ 0) and {} classes (at least 2)",
                self.ridge, self.classes
            )));
        }
        Ok(())
    }

    fn check_width(&self, data: &Dataset) -> Result<(), EfpsnError> {
        if data.features() != self.features {
            return Err(EfpsnError::Data(format!(
                "the table has {} feature columns; the study's model needs {}",
                data.features(),
                self.features
            )));
        }
        Ok(())
    }

    /// Agent `agent`'s private cost: its part of the training rows, and nothing else.
    pub fn local_cost(
        &self,
        data: &Dataset,
        agent: usize,
        agents: usize,
    ) -> Result<LocalCost, EfpsnError> {
        self.check()?;
        self.check_width(data)?;
        let (parts, _) = split_parts(data, agents, self.test_fraction, self.seed)?;
        let part = parts.get(agent).ok_or_else(|| {
            EfpsnError::Parameter(format!("agent {agent} of a split over {agents}"))
        })?;
        LocalCost::new(
            Model::Softmax { classes: self.classes },
            examples(part, self.feature_bound)?,
            self.ridge,
        )
    }

    /// The private cost of an agent that brings its own labelled table instead of its part of the
    /// shared one: every row of `data` is its own. The table must fit the public model: the same
    /// number of features, each in [0, feature_bound], and labels among the study's classes; a
    /// table that does not is refused, naming what is wrong, before anything is sent.
    pub fn own_cost(&self, data: &Dataset) -> Result<LocalCost, EfpsnError> {
        self.check()?;
        self.check_width(data)?;
        if data.is_empty() {
            return Err(EfpsnError::Data("the table has no rows".into()));
        }
        for r in 0..data.len() {
            if let Some((j, v)) = data
                .x
                .row(r)
                .iter()
                .enumerate()
                .find(|(_, v)| !(**v >= 0.0 && **v <= self.feature_bound))
            {
                return Err(EfpsnError::Data(format!(
                    "row {}, feature {}: {v} is outside the public range [0, {}]",
                    r + 1,
                    j + 1,
                    self.feature_bound
                )));
            }
        }
        LocalCost::new(
            Model::Softmax { classes: self.classes },
            examples(data, self.feature_bound)?,
            self.ridge,
        )
    }

    /// The whole problem (every part, the test rows, x*).
    pub fn problem(&self, data: &Dataset, agents: usize) -> Result<Problem, EfpsnError> {
        self.check_width(data)?;
        Problem::classification(
            data,
            self.classes,
            agents,
            self.feature_bound,
            self.ridge,
            self.test_fraction,
            self.seed,
        )
    }
}

impl Problem {
    /// Softmax regression on a labelled table (e.g. scikit-learn's `digits`): `feature_bound` is
    /// the public bound features are divided by (16 for digits' pixel counts); a seeded split
    /// keeps `test_fraction` for testing and deals the rest equally to the agents.
    pub fn classification(
        data: &Dataset,
        classes: usize,
        agents: usize,
        feature_bound: f64,
        ridge: f64,
        test_fraction: f64,
        seed: u64,
    ) -> Result<Self, EfpsnError> {
        if !(feature_bound > 0.0 && feature_bound.is_finite()) {
            return Err(EfpsnError::Parameter(format!(
                "feature bound {feature_bound} must be positive"
            )));
        }
        let (parts, test) = split_parts(data, agents, test_fraction, seed)?;
        let model = Model::Softmax { classes };
        let costs = parts
            .iter()
            .map(|p| LocalCost::new(model, examples(p, feature_bound)?, ridge))
            .collect::<Result<Vec<_>, _>>()?;
        let test = examples(&test, feature_bound)?;
        let x_star = centralised_minimiser(&costs);
        Ok(Problem { model, costs, test, x_star })
    }

    /// Least squares on generated data y = aᵀw + noise, a ∈ [−1, 1]^d: the minimiser has a
    /// closed form (spec §C: "a quadratic toy has closed-form x*").
    pub fn least_squares(
        agents: usize,
        rows_per_agent: usize,
        features: usize,
        ridge: f64,
        seed: u64,
    ) -> Result<Self, EfpsnError> {
        if agents == 0 || rows_per_agent == 0 || features == 0 {
            return Err(EfpsnError::Parameter(
                "agents, rows and features must be at least 1".into(),
            ));
        }
        let (data, _) =
            synthetic::regression(agents * rows_per_agent + rows_per_agent, features, 0.1, seed);
        let train = data.head(agents * rows_per_agent);
        let test = data.select(&(agents * rows_per_agent..data.len()).collect::<Vec<_>>());
        let parts = train.partition(agents).map_err(|e| EfpsnError::Data(e.to_string()))?;
        let costs = parts
            .iter()
            .map(|p| LocalCost::new(Model::LeastSquares, examples(p, 1.0)?, ridge))
            .collect::<Result<Vec<_>, _>>()?;
        let x_star = centralised_minimiser(&costs);
        Ok(Problem { model: Model::LeastSquares, costs, test: examples(&test, 1.0)?, x_star })
    }

    pub fn agents(&self) -> usize {
        self.costs.len()
    }

    pub fn dim(&self) -> usize {
        self.x_star.len()
    }

    /// ‖x − x*‖.
    pub fn deviation(&self, x: &[f64]) -> f64 {
        x.iter().zip(&self.x_star).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt()
    }

    /// Test accuracy (softmax) or RMSE (least squares) of x.
    pub fn score(&self, x: &[f64]) -> f64 {
        evaluate(self.model, x, &self.test)
    }

    /// F(x) = (1/n) Σ_i f_i(x), unperturbed.
    pub fn objective(&self, x: &[f64]) -> f64 {
        self.costs.iter().map(|c| c.loss(x)).sum::<f64>() / self.agents() as f64
    }
}
