//! The EFPSN study of the room (dashboard observer + agent tabs) end to end in one process:
//! real Paillier Phase 1, Phase 2 among the agents, reports to the dashboard, consent for the
//! comparison runs, departures and bad tasks.

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::data::Dataset;
use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::epsilon::TheoremInputs;
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::{Phase1Setup, Plan};
use capelab_core::efpsn::models::Model;
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::ClassificationSplit;
use capelab_core::efpsn::sim::Method;
use capelab_core::rng::derive;
use capelab_core::study::StudyId;
use capelab_core::study::efpsn::sim::StudySim;
use capelab_core::study::efpsn::{
    AgentData, Decline, EfpsnTask, Residual, RunPlan, RunStatus, Stop,
};
use capelab_core::study::iterative::SiteSettings;
use capelab_core::wire::ParticipantId;
use rand_distr::{Distribution, Normal};

const CLASSES: usize = 3;
const FEATURES: usize = 6;

/// Three Gaussian blobs in [0, 8]^6 (a small stand-in for digits' 0..16 pixels).
fn blobs(rows: usize) -> Dataset {
    let mut rng = derive(11, "blobs");
    let noise = Normal::new(0.0, 1.5).unwrap();
    let mut x = Vec::new();
    let mut y = Vec::new();
    for r in 0..rows {
        let class = r % CLASSES;
        x.push(
            (0..FEATURES)
                .map(|j| {
                    let centre = if j % CLASSES == class { 6.0 } else { 2.0 };
                    f64::clamp(centre + noise.sample(&mut rng), 0.0, 8.0)
                })
                .collect::<Vec<f64>>(),
        );
        y.push(class as f64);
    }
    Dataset::from_rows(&x, &y).unwrap()
}

fn task(agents: &[ParticipantId], methods: &[Method], key_bits: u32) -> EfpsnTask {
    let n = agents.len();
    let graph = Graph::build(Topology::Ring, n, 0).unwrap();
    let model = Model::Softmax { classes: CLASSES };
    let variables = model.bias_indices(FEATURES);
    let runs = methods
        .iter()
        .enumerate()
        .map(|(i, &method)| RunPlan {
            method,
            plan: Plan {
                study: StudyId([i as u8 + 1; 16]),
                graph: graph.clone(),
                agents: agents.to_vec(),
                setup: Phase1Setup {
                    basis: BasisSpec {
                        max_degree: 1,
                        variables: variables.len() as u32,
                        size: variables.len() as u32 + 1,
                        seed: 5,
                    },
                    law: NoiseLaw { gamma: 1e3, decay: 1.0, precision: 6 },
                },
                phase2: Phase2Settings {
                    optimizer: Optimizer::Tracking,
                    iterations: 400,
                    step: 1.0,
                    decay: 0.0,
                    batch: None,
                },
                variables: variables.clone(),
            },
        })
        .collect();
    EfpsnTask {
        runs,
        split: split(),
        key_bits,
        record_every: 50,
        theorem: TheoremInputs::spec_default(1e3, 1e-6),
    }
}

fn split() -> ClassificationSplit {
    ClassificationSplit {
        classes: CLASSES,
        features: FEATURES,
        feature_bound: 8.0,
        ridge: 1e-3,
        test_fraction: 0.25,
        seed: 3,
    }
}

fn ledger(i: usize) -> Ledger {
    Ledger::new(format!("site {i}"), Budget::new(50.0, 1e-5).unwrap()).unwrap()
}

const ALL: [Method; 3] = [Method::Efpsn, Method::Baseline, Method::NoiseFree];

#[test]
fn efpsn_matches_noise_free_on_the_dashboard_while_each_agent_hides_behind_its_mask() {
    let data = blobs(480);
    let consent = SiteSettings { allow_nonprivate: true };
    let mut sim = StudySim::start(4, &data, consent, ledger, |a| task(a, &ALL, 1024), 1).unwrap();
    sim.run().unwrap();
    assert!(sim.finished());
    let runs = sim.dashboard.machine.runs();
    for run in runs {
        assert!(run.status.iter().all(|s| *s == RunStatus::Done), "{:?}", run.status);
        assert_eq!(run.trace.last().unwrap().iteration, 400, "{}", run.method.name());
    }
    let efpsn = &runs[0];
    let (baseline, exact) = (&runs[1], &runs[2]);
    let (e, b, f) =
        (efpsn.trace.last().unwrap(), baseline.trace.last().unwrap(), exact.trace.last().unwrap());
    // The masks cancel: EFPSN ends where the noise-free run ends; the baseline does not.
    assert!((e.score - f.score).abs() <= 0.01, "EFPSN {} vs noise-free {}", e.score, f.score);
    assert!(e.deviation < 0.05 * b.deviation, "EFPSN {} vs baseline {}", e.deviation, b.deviation);
    assert!(f.score > 0.8, "noise-free accuracy {}", f.score);
    // Each agent's ∇f̂_i(0) is far from its ∇f_i(0), their sum is not.
    let g_exact: Vec<Vec<f64>> =
        exact.gradient_at_zero.iter().map(|g| g.clone().unwrap()).collect();
    let g_efpsn: Vec<Vec<f64>> =
        efpsn.gradient_at_zero.iter().map(|g| g.clone().unwrap()).collect();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff =
        |a: &[f64], b: &[f64]| norm(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>());
    for (p, q) in g_efpsn.iter().zip(&g_exact) {
        assert!(
            diff(p, q) > 10.0 * norm(q),
            "an agent's mask is small: {} vs {}",
            diff(p, q),
            norm(q)
        );
    }
    let (sum_e, sum_f) = (efpsn.gradient_sum().unwrap(), exact.gradient_sum().unwrap());
    assert!(diff(&sum_e, &sum_f) < 1e-9 * g_efpsn.iter().map(|g| norm(g)).sum::<f64>());
    // The dashboard's SecureAgg over the integer masks: exactly zero, every coordinate.
    let residual = sim.dashboard.machine.residual();
    assert!(residual.is_exactly_zero(), "{residual:?}");
    let Residual::Done { residual, .. } = residual else { unreachable!() };
    assert_eq!(residual.len(), CLASSES + 1, "one sum per mask coefficient");
    // The EFPSN run's (ε, δ) is on every agent's ledger, the comparisons are not.
    for site in &mut sim.sites {
        let ledger = site.machine.ledger();
        assert_eq!(ledger.entries().len(), 1, "{:?}", ledger.entries());
        assert!(ledger.entries()[0].study.starts_with("efpsn/efpsn/"));
    }
}

#[test]
fn without_consent_a_site_declines_the_comparison_runs_and_efpsn_still_runs() {
    let data = blobs(240);
    let no = SiteSettings { allow_nonprivate: false };
    let mut sim = StudySim::start(3, &data, no, ledger, |a| task(a, &ALL, 1024), 2).unwrap();
    sim.run().unwrap();
    let runs = sim.dashboard.machine.runs();
    assert!(runs[0].status.iter().all(|s| *s == RunStatus::Done));
    for run in &runs[1..] {
        for s in &run.status {
            assert_eq!(*s, RunStatus::Declined(Decline::NoConsent));
        }
    }
    assert!(sim.dashboard.machine.stopped().is_none(), "the EFPSN run went on");
}

#[test]
fn a_site_whose_budget_the_run_would_exceed_declines_it_with_nothing_sent() {
    let data = blobs(240);
    let yes = SiteSettings { allow_nonprivate: true };
    // Site 1's budget is below the run's ε: it declines; without it the others cannot finish.
    let small = |i: usize| {
        let eps = if i == 1 { 0.01 } else { 50.0 };
        Ledger::new(format!("site {i}"), Budget::new(eps, 1e-5).unwrap()).unwrap()
    };
    let mut sim = StudySim::start(3, &data, yes, small, |a| task(a, &ALL, 1024), 5).unwrap();
    let declining = sim.sites[1].transport.id();
    sim.run().unwrap();
    let runs = sim.dashboard.machine.runs();
    // Site 1 refuses the whole study (the comparisons too), saying how far its budget falls
    // short: the least budget ε that admits the run, which is more than the run's own ε.
    let Some(Stop::Declined { who, why: Decline::Budget { shortfall, run_epsilon } }) =
        sim.dashboard.machine.stopped()
    else {
        panic!("{:?}", sim.dashboard.machine.stopped())
    };
    assert_eq!(*who, declining);
    assert_eq!(shortfall.budget, 0.01);
    let needed = shortfall.needed.expect("ε, not δ, runs short");
    assert!(needed >= *run_epsilon && *run_epsilon > 0.01, "{needed} {run_epsilon}");
    for run in runs {
        assert!(matches!(run.status[1], RunStatus::Declined(Decline::Budget { .. })));
    }
    assert!(sim.sites[1].machine.ledger().entries().is_empty(), "nothing charged");
    // The others are told who declined and stop, the EFPSN run in Phase 1 (nothing of it
    // released), the comparison runs with it: they have nothing to compare without it.
    for i in [0, 2] {
        for run in runs {
            assert!(
                matches!(&run.status[i], RunStatus::Stopped(Stop::Declined { who, .. }) if *who == declining),
                "{:?}",
                run.status[i]
            );
        }
        assert!(runs[0].iterates[i].is_empty(), "no EFPSN iterate was released");
    }
    // A budget raised to what the shortfall says admits the run.
    let mut ledger = small(1);
    ledger.set_budget(capelab_core::accountant::Budget::new(needed, 1e-5).unwrap()).unwrap();
    let eps = sim.dashboard.machine.task().epsilon_of(&sim.dashboard.machine.task().runs[0]);
    capelab_core::study::efpsn::ledger::record_run(&mut ledger, "s".into(), &eps.unwrap(), 0)
        .expect("the raised budget covers the run");
    assert!(sim.finished());
}

#[test]
fn an_agent_may_bring_its_own_labelled_table_and_a_bad_one_is_declined_naming_it() {
    let data = blobs(480);
    let yes = SiteSettings { allow_nonprivate: true };
    // Agent 2 brings 120 rows of its own (drawn like the shared ones, not from them).
    let own = {
        let more = blobs(600);
        more.select(&(480..600).collect::<Vec<_>>())
    };
    let rows = |i: usize| {
        if i == 2 { AgentData::Own(own.clone()) } else { AgentData::Shared(data.clone()) }
    };
    let methods = [Method::Efpsn, Method::NoiseFree];
    let mut sim =
        StudySim::start_with(4, &data, rows, yes, ledger, |a| task(a, &methods, 1024), 6).unwrap();
    sim.run().unwrap();
    let runs = sim.dashboard.machine.runs();
    for run in runs {
        assert!(run.status.iter().all(|s| *s == RunStatus::Done), "{:?}", run.status);
    }
    let (e, f) = (runs[0].trace.last().unwrap(), runs[1].trace.last().unwrap());
    assert!((e.score - f.score).abs() <= 0.01, "EFPSN {} vs noise-free {}", e.score, f.score);
    assert!(f.score > 0.8, "noise-free accuracy {}", f.score);
    // Its own rows are all its own: its gradient at 0 is the one of those 120 rows.
    let own_cost = split().own_cost(&own).unwrap();
    let exact = runs[1].gradient_at_zero[2].clone().unwrap();
    let mut expected = vec![0.0; exact.len()];
    own_cost.gradient(&vec![0.0; exact.len()], None, &mut expected);
    let gap = exact.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(gap < 1e-12, "agent 2's gradient at 0 is not its own table's: {gap}");

    // A table with the wrong width, or a value outside the public range, is refused by that
    // agent alone, naming the problem; the others are told who declined.
    let narrow = Dataset::from_rows(&[vec![1.0; FEATURES - 1]], &[0.0]).unwrap();
    let mut wide = vec![vec![1.0; FEATURES]; 3];
    wide[1][4] = 9.5;
    let out_of_range = Dataset::from_rows(&wide, &[0.0, 1.0, 2.0]).unwrap();
    for (bad, expect) in [
        (narrow, "5 feature columns; the study's model needs 6"),
        (out_of_range, "row 2, feature 5: 9.5 is outside the public range [0, 8]"),
    ] {
        let rows = |i: usize| {
            if i == 1 { AgentData::Own(bad.clone()) } else { AgentData::Shared(data.clone()) }
        };
        let mut sim = StudySim::start_with(
            3,
            &data,
            rows,
            yes,
            ledger,
            |a| task(a, &[Method::Efpsn], 1024),
            7,
        )
        .unwrap();
        sim.run().unwrap();
        let run = &sim.dashboard.machine.runs()[0];
        let RunStatus::Declined(Decline::Refused(why)) = &run.status[1] else {
            panic!("{:?}", run.status[1])
        };
        assert!(why.contains("this agent's own table") && why.contains(expect), "{why}");
        assert!(!why.contains("data:"), "plain words: {why}");
        assert!(sim.sites[1].machine.ledger().entries().is_empty());
        assert!(sim.finished());
    }
}

#[test]
fn a_task_with_a_bad_key_size_is_declined_by_every_agent_naming_it() {
    let data = blobs(240);
    let yes = SiteSettings { allow_nonprivate: true };
    let built = StudySim::start(3, &data, yes, ledger, |a| task(a, &[Method::Efpsn], 512), 3);
    // The dashboard's own check refuses it before anything is sent.
    let err = built.err().expect("refused").to_string();
    assert!(err.contains("512-bit"), "{err}");
}

#[test]
fn an_agent_leaving_in_phase_2_is_named_by_its_neighbours_and_the_dashboard() {
    let data = blobs(240);
    let yes = SiteSettings { allow_nonprivate: true };
    let mut sim =
        StudySim::start(4, &data, yes, ledger, |a| task(a, &[Method::NoiseFree], 1024), 4).unwrap();
    // Deliver a little, then site 2 leaves.
    for _ in 0..6 {
        sim.dashboard.pump(0);
        for s in &mut sim.sites {
            s.pump(0);
        }
    }
    let leaving = sim.sites[2].transport.id();
    sim.room.disconnect(leaving);
    sim.sites.remove(2);
    sim.run().unwrap();
    let run = &sim.dashboard.machine.runs()[0];
    // Every agent, the one that left included, names who left: the dashboard and the pages
    // put its name there.
    for i in 0..4 {
        assert_eq!(run.status[i], RunStatus::Stopped(Stop::Left(leaving)), "agent {i}");
    }
    assert!(sim.finished());
    // What was reported before the departure is kept, and where each agent had got to.
    assert!(!run.iterates[0].is_empty());
    for reached in &run.reached {
        assert!(matches!(reached, RunStatus::Phase2 { .. }), "{reached:?}");
    }
}
