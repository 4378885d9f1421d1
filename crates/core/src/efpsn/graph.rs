//! The agents' communication graph: connected, undirected, static (spec efpsn-vertical-dpvi
//! §A1), its Metropolis mixing weights (§A2 Phase 2) and its unweighted Laplacian (§A2 eq. 10,
//! §A3): the privacy theorem uses degree minus adjacency, never a Laplacian built from W
//! (spec §D pitfall 7).

use nalgebra::{DMatrix, SymmetricEigen};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::EfpsnError;
use crate::rng::derive;

/// The topologies capelab builds by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    Ring,
    Path,
    Star,
    Complete,
    /// Points uniform in the unit square joined when closer than a radius; redrawn (from the
    /// seed) until connected.
    Geometric,
}

impl Topology {
    pub const ALL: [Topology; 5] =
        [Topology::Ring, Topology::Path, Topology::Star, Topology::Complete, Topology::Geometric];

    pub fn name(self) -> &'static str {
        match self {
            Topology::Ring => "ring",
            Topology::Path => "path",
            Topology::Star => "star",
            Topology::Complete => "complete",
            Topology::Geometric => "geometric",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// An undirected simple graph on agents 0..n, with sorted neighbour lists (no self-loops: an
/// agent's own messages cancel, spec §A1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graph {
    neighbours: Vec<Vec<usize>>,
}

impl Graph {
    /// A named topology on n agents; `seed` only matters for [`Topology::Geometric`].
    pub fn build(topology: Topology, n: usize, seed: u64) -> Result<Self, EfpsnError> {
        if n < 2 {
            return Err(EfpsnError::Graph(format!("{n} agent(s): EFPSN needs at least 2")));
        }
        let edges: Vec<(usize, usize)> = match topology {
            Topology::Ring if n == 2 => vec![(0, 1)],
            Topology::Ring => (0..n).map(|i| (i, (i + 1) % n)).collect(),
            Topology::Path => (0..n - 1).map(|i| (i, i + 1)).collect(),
            Topology::Star => (1..n).map(|i| (0, i)).collect(),
            Topology::Complete => (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect(),
            Topology::Geometric => return Self::geometric(n, seed),
        };
        Self::from_edges(n, &edges)
    }

    /// A graph from an edge list; refuses self-loops, agents out of range and a disconnected
    /// graph (consensus, and the theorem's μ₂ > 0, need connectivity).
    pub fn from_edges(n: usize, edges: &[(usize, usize)]) -> Result<Self, EfpsnError> {
        let mut neighbours = vec![Vec::new(); n];
        for &(a, b) in edges {
            if a >= n || b >= n {
                return Err(EfpsnError::Graph(format!(
                    "edge ({a}, {b}) names an agent beyond {}",
                    n - 1
                )));
            }
            if a == b {
                return Err(EfpsnError::Graph(format!("self-loop at agent {a}")));
            }
            neighbours[a].push(b);
            neighbours[b].push(a);
        }
        for list in &mut neighbours {
            list.sort_unstable();
            list.dedup();
        }
        let graph = Graph { neighbours };
        let reached = graph.component_of(0);
        if reached < n {
            return Err(EfpsnError::Graph(format!(
                "the graph is disconnected: agent 0 reaches {reached} of {n} agents"
            )));
        }
        Ok(graph)
    }

    fn geometric(n: usize, seed: u64) -> Result<Self, EfpsnError> {
        // The connectivity threshold of random geometric graphs is r ~ √(ln n / (π n)); twice it
        // connects small graphs with high probability.
        let radius = (2.0 * (n as f64).ln().max(1.0) / n as f64).sqrt().min(1.5);
        let mut rng = derive(seed, "efpsn/graph/geometric");
        for _ in 0..1000 {
            let points: Vec<(f64, f64)> =
                (0..n).map(|_| (rng.random::<f64>(), rng.random::<f64>())).collect();
            let mut edges = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    let (dx, dy) = (points[i].0 - points[j].0, points[i].1 - points[j].1);
                    if dx.hypot(dy) <= radius {
                        edges.push((i, j));
                    }
                }
            }
            if let Ok(g) = Self::from_edges(n, &edges) {
                return Ok(g);
            }
        }
        Err(EfpsnError::Graph(format!("no connected geometric graph on {n} agents in 1000 draws")))
    }

    fn component_of(&self, start: usize) -> usize {
        let mut seen = vec![false; self.len()];
        let mut stack = vec![start];
        seen[start] = true;
        let mut count = 1;
        while let Some(i) = stack.pop() {
            for &j in &self.neighbours[i] {
                if !seen[j] {
                    seen[j] = true;
                    count += 1;
                    stack.push(j);
                }
            }
        }
        count
    }

    /// The number of agents.
    pub fn len(&self) -> usize {
        self.neighbours.len()
    }

    pub fn is_empty(&self) -> bool {
        self.neighbours.is_empty()
    }

    pub fn neighbours(&self, i: usize) -> &[usize] {
        &self.neighbours[i]
    }

    pub fn degree(&self, i: usize) -> usize {
        self.neighbours[i].len()
    }

    pub fn edges(&self) -> Vec<(usize, usize)> {
        (0..self.len())
            .flat_map(|i| self.neighbours[i].iter().filter(move |&&j| j > i).map(move |&j| (i, j)))
            .collect()
    }

    /// Metropolis weights: w_ij = 1/(1 + max(d_i, d_j)) on edges, w_ii = 1 − Σ_j w_ij. Symmetric
    /// and doubly stochastic (spec §A2, [choice]).
    pub fn metropolis_weights(&self, i: usize) -> MixingRow {
        let others: Vec<(usize, f64)> = self.neighbours[i]
            .iter()
            .map(|&j| (j, 1.0 / (1.0 + self.degree(i).max(self.degree(j)) as f64)))
            .collect();
        let own = 1.0 - others.iter().map(|(_, w)| w).sum::<f64>();
        MixingRow { own, others }
    }

    /// The eigenvalues of the Metropolis mixing matrix W, ascending (the last is 1).
    pub fn mixing_spectrum(&self) -> Vec<f64> {
        let n = self.len();
        let mut w = DMatrix::zeros(n, n);
        for i in 0..n {
            let row = self.metropolis_weights(i);
            w[(i, i)] = row.own;
            for (j, wij) in row.others {
                w[(i, j)] = wij;
            }
        }
        let mut eig = SymmetricEigen::new(w).eigenvalues.as_slice().to_vec();
        eig.sort_by(f64::total_cmp);
        eig
    }

    /// The unweighted Laplacian 𝓛 = degree − adjacency.
    pub fn laplacian(&self) -> DMatrix<f64> {
        let n = self.len();
        let mut l = DMatrix::zeros(n, n);
        for i in 0..n {
            l[(i, i)] = self.degree(i) as f64;
            for &j in &self.neighbours[i] {
                l[(i, j)] = -1.0;
            }
        }
        l
    }

    /// (μ₂, μ_max): the algebraic connectivity and the largest eigenvalue of 𝓛.
    pub fn laplacian_spectrum(&self) -> (f64, f64) {
        let mut eig = SymmetricEigen::new(self.laplacian()).eigenvalues.as_slice().to_vec();
        eig.sort_by(f64::total_cmp);
        (eig[1], eig[eig.len() - 1])
    }
}

/// One agent's row of the mixing matrix W.
#[derive(Clone, Debug, PartialEq)]
pub struct MixingRow {
    pub own: f64,
    pub others: Vec<(usize, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_graphs_have_the_expected_spectra() {
        // Spec §A3's table: C5 (1.3820, 3.6180), K5 (5, 5), P5 (0.3820, 3.6180).
        let cases = [
            (Topology::Ring, 1.3820, 3.6180),
            (Topology::Complete, 5.0, 5.0),
            (Topology::Path, 0.3820, 3.6180),
        ];
        for (t, mu2, mumax) in cases {
            let (a, b) = Graph::build(t, 5, 0).unwrap().laplacian_spectrum();
            assert!((a - mu2).abs() < 5e-5 && (b - mumax).abs() < 5e-5, "{t:?}: {a}, {b}");
        }
        let (a, b) = Graph::build(Topology::Star, 5, 0).unwrap().laplacian_spectrum();
        assert!((a - 1.0).abs() < 1e-12 && (b - 5.0).abs() < 1e-12);
    }

    #[test]
    fn metropolis_weights_are_doubly_stochastic() {
        for t in Topology::ALL {
            let g = Graph::build(t, 7, 3).unwrap();
            let mut w = DMatrix::<f64>::zeros(7, 7);
            for i in 0..7 {
                let row = g.metropolis_weights(i);
                assert!(row.own >= 0.0);
                w[(i, i)] = row.own;
                for (j, wij) in row.others {
                    w[(i, j)] = wij;
                }
            }
            assert!((w.clone() - w.transpose()).abs().max() < 1e-15, "{t:?} symmetric");
            for i in 0..7 {
                assert!((w.row(i).sum() - 1.0).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn the_mixing_spectrum_of_a_ring_of_four() {
        // Metropolis on C4: w_ij = 1/3, w_ii = 1/3; eigenvalues 1/3 + (2/3)·cos(2πk/4).
        let eig = Graph::build(Topology::Ring, 4, 0).unwrap().mixing_spectrum();
        for (got, want) in eig.iter().zip([-1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0]) {
            assert!((got - want).abs() < 1e-12, "{eig:?}");
        }
    }

    #[test]
    fn disconnected_and_malformed_graphs_are_refused() {
        let err = Graph::from_edges(4, &[(0, 1), (2, 3)]).unwrap_err().to_string();
        assert!(err.contains("disconnected"), "{err}");
        assert!(
            Graph::from_edges(3, &[(0, 0), (1, 2)]).unwrap_err().to_string().contains("self-loop")
        );
        assert!(Graph::from_edges(3, &[(0, 5)]).is_err());
        assert!(Graph::build(Topology::Ring, 1, 0).is_err());
    }

    #[test]
    fn geometric_graphs_are_connected_and_reproducible() {
        for n in [3, 5, 12, 40] {
            let a = Graph::build(Topology::Geometric, n, 9).unwrap();
            assert_eq!(a, Graph::build(Topology::Geometric, n, 9).unwrap());
            assert!(a.laplacian_spectrum().0 > 1e-9);
        }
    }
}
