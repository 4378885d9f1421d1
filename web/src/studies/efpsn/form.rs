//! The dashboard's "Decentralised optimisation (EFPSN)" form, read and checked before anything is
//! sent: γ, T and α each with the range a run can take, the graph drawn for the sites present,
//! Theorem IV.1's ε for it, and every present site's budget against that ε (from the ledger
//! reports), each refusal in the form's words beside its field.

use std::collections::BTreeMap;

use capelab_core::efpsn::attack::Perturbed;
use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::epsilon::{TheoremEpsilon, TheoremInputs, theorem_epsilon};
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::{Phase1Setup, Plan};
use capelab_core::efpsn::models::Model;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::sim::Method;
use capelab_core::study::StudyId;
use capelab_core::study::efpsn::{EfpsnTask, RunPlan};
use capelab_core::wire::ParticipantId;
use rand_core::Rng;

use crate::frame::budget::round_up;
use crate::frame::form::{Field, FormError};
use crate::ledger_report::LedgerReport;
use crate::numbers::show;

pub const GAMMA: Field = Field::new("efpsn-gamma", "noise scale γ");
pub const ITERATIONS: Field = Field::new("efpsn-iterations", "iterations T");
pub const STEP: Field = Field::new("efpsn-step", "step α");

/// γ from here: below it Theorem IV.1's ε is in the hundreds on any graph.
pub const MIN_GAMMA: f64 = 1e-3;
/// γ up to here (the paper sweeps 10⁻² … 10⁴): the integer noise 10⁶·η stays far inside the
/// 2⁵² a Paillier plaintext and the masks' sums carry.
pub const MAX_GAMMA: f64 = 1e12;
/// The paper runs 10 000 updates per agent; each iteration is one message per link and run.
pub const MAX_ITERATIONS: usize = 10_000;
/// Below this step the iterates barely move in [`MAX_ITERATIONS`] iterations.
pub const MIN_STEP: f64 = 1e-4;
/// Decimal digits kept of each noise value (P_prec).
const PRECISION: u32 = 6;
/// Theorem IV.1's δ: a tenth of a site's default budget δ (10⁻⁵), so the run leaves some of it.
pub const DELTA: f64 = 1e-6;
/// The ridge λ of every local cost (digits' public split, [`crate::studies::efpsn::run`]).
pub const RIDGE: f64 = 1e-3;

/// What the teacher typed and picked.
#[derive(Clone, Debug, PartialEq)]
pub struct EfpsnFields {
    pub topology: Topology,
    pub gamma: String,
    pub optimizer: Optimizer,
    pub iterations: String,
    pub step: String,
    pub key_bits: u32,
    pub perturbed: Perturbed,
    pub baseline: bool,
    pub noise_free: bool,
}

impl Default for EfpsnFields {
    fn default() -> Self {
        EfpsnFields {
            topology: Topology::Ring,
            gamma: "1000".into(),
            optimizer: Optimizer::Tracking,
            iterations: "200".into(),
            step: "2".into(),
            key_bits: 2048,
            perturbed: Perturbed::Biases,
            baseline: true,
            noise_free: true,
        }
    }
}

/// The checked form: everything of the task but what the data set says (its classes and
/// features), which the dashboard knows once it has loaded it.
#[derive(Clone, Debug, PartialEq)]
pub struct EfpsnForm {
    pub agents: Vec<ParticipantId>,
    pub graph: Graph,
    pub gamma: f64,
    pub optimizer: Optimizer,
    pub iterations: u32,
    pub step: f64,
    pub key_bits: u32,
    pub perturbed: Perturbed,
    pub methods: Vec<Method>,
    /// Theorem IV.1's (ε, δ) for this graph and γ: what each agent's ledger records.
    pub epsilon: TheoremEpsilon,
    /// Seeds the basis and the runs' ids.
    seed: u64,
}

/// What the form needs to know of the room besides the sites present: each site's latest ledger
/// report and name, so a budget that cannot cover the run is named before anything is sent.
#[derive(Clone, Debug, Default)]
pub struct Room {
    pub reports: BTreeMap<ParticipantId, LedgerReport>,
    pub names: BTreeMap<ParticipantId, String>,
}

impl Room {
    fn name(&self, id: ParticipantId) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| format!("Site {id}"))
    }
}

impl EfpsnFields {
    /// Reads the fields for a study among `sites` (in graph order); `seed` draws the graph (a
    /// random geometric one), the basis and the runs' ids.
    pub fn read(
        &self,
        sites: Vec<ParticipantId>,
        room: &Room,
        seed: u64,
    ) -> Result<EfpsnForm, FormError> {
        if sites.len() < 2 {
            return Err(FormError::too_few_sites(
                sites.len(),
                2,
                "EFPSN's agents are the sites, on a graph of at least two",
            ));
        }
        let gamma = GAMMA.positive(&self.gamma, MIN_GAMMA, MAX_GAMMA)?;
        let iterations = ITERATIONS.count(&self.iterations, 1, MAX_ITERATIONS)?;
        let graph = Graph::build(self.topology, sites.len(), seed).map_err(|e| {
            FormError::whole(format!(
                "no {} graph on these sites: {}",
                self.topology.name(),
                e.words()
            ))
        })?;
        let bound = self.optimizer.finite_step_bound(&graph.mixing_spectrum(), RIDGE);
        let step = STEP.positive(&self.step, MIN_STEP, f64::MAX)?;
        if step >= bound {
            return Err(STEP.error(format!(
                "{} is too large: on this {} graph, {} with the ridge λ = {} keeps the iterates \
                 finite only below α = {}; they would grow without bound",
                show(step),
                self.topology.name(),
                optimizer_words(self.optimizer),
                show(RIDGE),
                show(bound)
            )));
        }
        let law = NoiseLaw { gamma, decay: 1.0, precision: PRECISION };
        law.check().map_err(|e| GAMMA.error(e.words()))?;
        let epsilon = theorem_epsilon(&graph, &TheoremInputs::spec_default(gamma, DELTA))
            .map_err(|e| GAMMA.error(e.words()))?;
        let mut methods = vec![Method::Efpsn];
        if self.baseline {
            methods.push(Method::Baseline);
        }
        if self.noise_free {
            methods.push(Method::NoiseFree);
        }
        let form = EfpsnForm {
            agents: sites,
            graph,
            gamma,
            optimizer: self.optimizer,
            iterations: u32::try_from(iterations).unwrap_or(u32::MAX),
            step,
            key_bits: self.key_bits,
            perturbed: self.perturbed,
            methods,
            epsilon,
            seed,
        };
        form.budgets(room)?;
        Ok(form)
    }
}

fn optimizer_words(optimizer: Optimizer) -> &'static str {
    match optimizer {
        Optimizer::Tracking => "gradient tracking",
        Optimizer::Dsgd => "DSGD",
    }
}

impl EfpsnForm {
    /// Refuses the run when a site's ledger report shows it cannot cover the run's ε: its total
    /// after the run is at least what it has spent plus the run's ε (basic composition adds ε,
    /// and converts the rest at a smaller δ). The site's own ledger still decides (and declines
    /// with the exact figure) for what the report cannot tell.
    fn budgets(&self, room: &Room) -> Result<(), FormError> {
        let e = self.epsilon.epsilon;
        for &site in &self.agents {
            let Some(report) = room.reports.get(&site) else { continue };
            let name = room.name(site);
            if report.budget_delta <= DELTA {
                return Err(FormError::whole(format!(
                    "{name}'s budget δ ({}) is not above this run's δ ({}): raise {name}'s δ",
                    show(report.budget_delta),
                    show(DELTA)
                )));
            }
            let needed = report.spent + e;
            if needed > report.budget_epsilon {
                return Err(FormError::whole(format!(
                    "{name}'s budget (ε = {}) does not cover this run: it has spent {} and the \
                     run's ε is {} (Theorem IV.1 at γ = {}): raise {name}'s budget to at least {}, \
                     or raise γ",
                    show(report.budget_epsilon),
                    show(report.spent),
                    show(e),
                    show(self.gamma),
                    show(round_up(needed)),
                )));
            }
        }
        Ok(())
    }

    /// The task, once the data set's classes and features are known; checked as every agent
    /// will check it.
    pub fn task(&self, classes: usize, features: usize) -> Result<EfpsnTask, String> {
        let mut rng = capelab_core::rng::derive(self.seed, "efpsn/task");
        let model = Model::Softmax { classes };
        let variables = self.perturbed.variables(model, features);
        let m = variables.len() as u32;
        // The paper's (K_deg, m, N_b) = (1, 10, 10) for the biases; for all 650 parameters an
        // affine basis of 64 functions (as `cape efpsn-attack`), packed into few ciphertexts.
        let size = match self.perturbed {
            Perturbed::Biases => m,
            Perturbed::All => (m + 1).min(64),
        };
        let basis = BasisSpec { max_degree: 1, variables: m, size, seed: rng.next_u64() };
        let law = NoiseLaw { gamma: self.gamma, decay: 1.0, precision: PRECISION };
        let phase2 = Phase2Settings {
            optimizer: self.optimizer,
            iterations: self.iterations,
            step: self.step,
            decay: 0.0,
            batch: None,
        };
        let runs = self
            .methods
            .iter()
            .map(|&method| {
                let mut id = [0u8; 16];
                rng.fill_bytes(&mut id);
                RunPlan {
                    method,
                    plan: Plan {
                        study: StudyId(id),
                        graph: self.graph.clone(),
                        agents: self.agents.clone(),
                        setup: Phase1Setup { basis, law },
                        phase2,
                        variables: variables.clone(),
                    },
                }
            })
            .collect();
        let task = EfpsnTask {
            runs,
            split: super::run::digits_split(classes, features),
            key_bits: self.key_bits,
            record_every: (self.iterations / 40).max(1),
            theorem: TheoremInputs::spec_default(self.gamma, DELTA),
        };
        task.check().map_err(|e| e.words())?;
        Ok(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::accountant::ledger::Bound;

    fn room_with(spent: f64, budget: f64) -> Room {
        let report = LedgerReport {
            site: "Lab B".into(),
            budget_epsilon: budget,
            budget_delta: 1e-5,
            spent,
            spent_rdp: spent,
            spent_pld: spent,
            bound: Bound::Rdp,
            release_count: 1,
            releases: Vec::new(),
            allows_comparisons: false,
        };
        Room {
            reports: [(3, report)].into_iter().collect(),
            names: [(3, "Lab B".to_owned())].into_iter().collect(),
        }
    }

    #[test]
    fn the_defaults_make_the_papers_run_on_a_ring() {
        let form = EfpsnFields::default().read(vec![2, 3, 4, 5], &Room::default(), 1).unwrap();
        assert_eq!(form.graph, Graph::build(Topology::Ring, 4, 0).unwrap());
        assert_eq!((form.gamma, form.iterations, form.step), (1e3, 200, 2.0));
        assert_eq!(form.methods, Method::ALL);
        // Theorem IV.1 on C4 (μ₂ = 2, μ_max = 4) at γ = 10³, δ = 10⁻⁶.
        assert!((form.epsilon.mu2 - 2.0).abs() < 1e-9 && (form.epsilon.mu_max - 4.0).abs() < 1e-9);
        assert!(form.epsilon.epsilon > 0.1 && form.epsilon.epsilon < 0.2, "{:?}", form.epsilon);
        let task = form.task(10, 64).unwrap();
        assert_eq!(task.runs.len(), 3);
        assert_eq!(task.runs[0].plan.variables.len(), 10);
        assert_eq!(task.record_every, 5);
    }

    #[test]
    fn the_step_is_bounded_where_the_iterates_stop_being_finite() {
        let read = |optimizer, step: &str| {
            EfpsnFields { optimizer, step: step.into(), ..EfpsnFields::default() }.read(
                vec![2, 3, 4, 5],
                &Room::default(),
                1,
            )
        };
        // C4's W has −1/3 as its smallest eigenvalue: tracking α < 2/λ, DSGD α < (2/3)/λ.
        assert!(read(Optimizer::Tracking, "1999").is_ok());
        let e = read(Optimizer::Tracking, "2001").unwrap_err();
        assert_eq!(e.field, Some(STEP.id));
        assert!(e.message.contains("below α = 2\u{202f}000"), "{e}");
        assert!(read(Optimizer::Dsgd, "600").is_ok());
        let e = read(Optimizer::Dsgd, "700").unwrap_err();
        assert!(e.message.contains("DSGD") && e.message.contains("667"), "{e}");
        let e = read(Optimizer::Tracking, "1e308").unwrap_err();
        assert_eq!(
            e.message,
            "step α: 10³⁰⁸ is too large: on this ring graph, gradient tracking with the ridge λ = 0.001 keeps the iterates finite only below α = 2\u{202f}000; they would grow without bound"
        );
    }

    #[test]
    fn a_budget_the_report_shows_too_small_is_named_with_what_to_raise_it_to() {
        let fields = EfpsnFields::default();
        let ok = fields.read(vec![2, 3, 4, 5], &room_with(1.0, 10.0), 1).unwrap();
        let eps = ok.epsilon.epsilon;
        let e = fields.read(vec![2, 3, 4, 5], &room_with(9.95, 10.0), 1).unwrap_err();
        assert_eq!(e.field, None);
        assert!(e.message.starts_with("Lab B's budget (ε = 10) does not cover this run"), "{e}");
        let to = round_up(9.95 + eps);
        assert!(
            e.message.contains(&format!("raise Lab B's budget to at least {}", show(to))),
            "{e}"
        );
        assert!(to >= 9.95 + eps && to < 9.95 + eps + 0.1);
        // a small γ: ε in the hundreds
        let small = EfpsnFields { gamma: "0.001".into(), ..fields };
        let e = small.read(vec![2, 3, 4, 5], &room_with(0.0, 10.0), 1).unwrap_err();
        assert!(e.message.contains("or raise γ"), "{e}");
    }

    #[test]
    fn every_field_is_checked_in_the_forms_words() {
        let read = |f: EfpsnFields| f.read(vec![2, 3, 4], &Room::default(), 1);
        let e = read(EfpsnFields { iterations: "1e12".into(), ..Default::default() }).unwrap_err();
        assert_eq!(e.message, "iterations T: 10¹² is too many: the most it takes is 10\u{202f}000");
        let e = read(EfpsnFields { gamma: "1e308".into(), ..Default::default() }).unwrap_err();
        assert_eq!(e.message, "noise scale γ: 10³⁰⁸ is too large: the most it takes is 10¹²");
        let e = read(EfpsnFields { gamma: "0".into(), ..Default::default() }).unwrap_err();
        assert_eq!(e.field, Some(GAMMA.id));
        let e = read(EfpsnFields { step: "1e-320".into(), ..Default::default() }).unwrap_err();
        assert!(e.message.contains("too small"), "{e}");
        let one = EfpsnFields::default().read(vec![2], &Room::default(), 1).unwrap_err();
        assert_eq!(one.field, None);
        assert!(one.message.starts_with("1 site is present"), "{one}");
    }

    /// What a person types into any field, as the browser's form fuzzer does: every answer is a
    /// form whose task every agent accepts, or a refusal about that field.
    #[test]
    fn typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic() {
        let fields: [crate::frame::form::FuzzField<EfpsnFields>; 3] = [
            (GAMMA.id, |f| &mut f.gamma),
            (ITERATIONS.id, |f| &mut f.iterations),
            (STEP.id, |f| &mut f.step),
        ];
        for topology in Topology::ALL {
            for optimizer in [Optimizer::Tracking, Optimizer::Dsgd] {
                let base = || EfpsnFields { topology, optimizer, ..EfpsnFields::default() };
                crate::frame::form::each_mistake(&fields, base, |id, typed, f| {
                    match f.read(vec![1, 2, 3, 4, 5], &Room::default(), 7) {
                        Ok(form) => assert!(form.task(10, 64).unwrap().check().is_ok()),
                        Err(e) => assert_eq!(e.field, Some(id), "{typed}: {e:?}"),
                    }
                });
            }
        }
    }
}
