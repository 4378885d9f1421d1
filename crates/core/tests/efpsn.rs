//! EFPSN end to end in one process (spec efpsn-vertical-dpvi Part A): real Paillier Phase 1,
//! Phase 2 over the in-memory transport, and everything the protocol must refuse.

use capelab_core::driver::Machine;
use capelab_core::efpsn::EfpsnError;
use capelab_core::efpsn::agent::{EfpsnAgent, MaskSource};
use capelab_core::efpsn::basis::BasisSpec;
use capelab_core::efpsn::graph::{Graph, Topology};
use capelab_core::efpsn::mask::NoiseLaw;
use capelab_core::efpsn::messages::{Body, EfpsnMessage, Phase1Setup, Plan};
use capelab_core::efpsn::optimizer::{Optimizer, Phase2Settings};
use capelab_core::efpsn::problem::Problem;
use capelab_core::efpsn::sim::{EfpsnSim, Method, RunConfig, RunReport};
use capelab_core::rng::derive;
use capelab_core::study::StudyId;
use capelab_paillier::{KeySize, Keypair};

fn keys(n: usize, seed: u64) -> Vec<Keypair> {
    (0..n)
        .map(|i| Keypair::generate(KeySize::Demo1024, &mut derive(seed, &format!("key/{i}"))))
        .collect()
}

fn config(
    method: Method,
    optimizer: Optimizer,
    gamma: f64,
    iterations: u32,
    graph: Graph,
) -> RunConfig {
    RunConfig {
        method,
        graph,
        setup: Phase1Setup {
            basis: BasisSpec { max_degree: 1, variables: 10, size: 10, seed: 3 },
            law: NoiseLaw { gamma, decay: 1.0, precision: 6 },
        },
        phase2: Phase2Settings { optimizer, iterations, step: 0.5, decay: 0.0, batch: None },
        variables: (0..10).collect(),
        key_size: KeySize::Demo1024,
        record_every: iterations,
        seed: 1,
    }
}

fn run(problem: &Problem, config: &RunConfig, keys: Option<Vec<Keypair>>) -> RunReport {
    let mut sim = EfpsnSim::new(problem, config, keys).unwrap();
    sim.run_phase1().unwrap();
    sim.run_phase2(|_| {}).unwrap();
    sim.report(problem)
}

#[test]
fn efpsn_with_tracking_reaches_the_exact_minimiser_while_the_baseline_does_not() {
    let problem = Problem::least_squares(4, 100, 10, 1e-3, 7).unwrap();
    let graph = Graph::build(Topology::Ring, 4, 0).unwrap();
    let efpsn = run(
        &problem,
        &config(Method::Efpsn, Optimizer::Tracking, 1e3, 3000, graph.clone()),
        Some(keys(4, 1)),
    );
    let free = run(
        &problem,
        &config(Method::NoiseFree, Optimizer::Tracking, 1e3, 3000, graph.clone()),
        None,
    );
    let baseline =
        run(&problem, &config(Method::Baseline, Optimizer::Tracking, 1e3, 3000, graph), None);
    // The masks are large and cancel exactly.
    assert!(efpsn.largest_mask_coefficient > 1.0, "{}", efpsn.largest_mask_coefficient);
    assert_eq!(efpsn.zero_sum_residual, Some(vec![0; 10]));
    // On the ring's 4 edges: a key each way, then one packed ciphertext (mod n², 256 bytes at
    // 1024 bits) each way.
    assert_eq!(efpsn.phase1.messages, 16, "{:?}", efpsn.phase1);
    assert!(efpsn.phase1.bytes >= 8 * 256, "{:?}", efpsn.phase1);
    // Gradient tracking converges linearly; after 3000 steps both are within 1e-5 of x*, whose
    // norm is about 1, and the masks (|η̄| ≈ 100) leave no trace.
    assert!(free.last().deviation < 1e-5, "noise-free {}", free.last().deviation);
    assert!(efpsn.last().deviation < 1e-5, "EFPSN {}", efpsn.last().deviation);
    assert!(baseline.last().deviation > 1.0, "baseline {}", baseline.last().deviation);
}

/// Spec §A2 Phase 2 and §D pitfall 8: constant-step DSGD keeps an O(α‖c‖) bias, and ‖c‖ ∝ √γ.
#[test]
fn dsgd_keeps_a_bias_that_grows_with_the_square_root_of_gamma() {
    let problem = Problem::least_squares(4, 100, 10, 1e-3, 7).unwrap();
    let graph = Graph::build(Topology::Ring, 4, 0).unwrap();
    let k = keys(4, 2);
    let dev = |gamma: f64| {
        run(
            &problem,
            &config(Method::Efpsn, Optimizer::Dsgd, gamma, 3000, graph.clone()),
            Some(k.clone()),
        )
        .last()
        .deviation
    };
    let (low, high) = (dev(1e2), dev(1e4));
    // The same keys and seeds draw the same normal variates, so the masks scale exactly by 10.
    let ratio = high / low;
    assert!((ratio - 10.0).abs() < 0.5, "bias ratio {ratio} for γ × 100 (√ → 10)");
    assert!(low > 1e-4, "DSGD's bias at γ = 100: {low}");
}

fn plan(graph: Graph, setup: Phase1Setup) -> Plan {
    let agents = (1..=graph.len() as u32).collect();
    Plan {
        study: StudyId([9; 16]),
        graph,
        agents,
        setup,
        phase2: Phase2Settings {
            optimizer: Optimizer::Dsgd,
            iterations: 5,
            step: 0.1,
            decay: 0.0,
            batch: None,
        },
        variables: (0..10).collect(),
    }
}

fn setup(seed: u64) -> Phase1Setup {
    Phase1Setup {
        basis: BasisSpec { max_degree: 1, variables: 10, size: 4, seed },
        law: NoiseLaw { gamma: 10.0, decay: 1.0, precision: 6 },
    }
}

fn agent(plan: &Plan, me: u32, key: Keypair) -> (EfpsnAgent, Vec<capelab_core::driver::Outgoing>) {
    let problem = Problem::least_squares(plan.graph.len(), 20, 10, 1e-3, 1).unwrap();
    EfpsnAgent::start(
        me,
        plan.clone(),
        problem.costs[me as usize - 1].clone(),
        MaskSource::Exchange(Box::new(key)),
        1,
        derive(me as u64, "a"),
    )
    .unwrap()
}

#[test]
fn a_neighbour_with_another_basis_seed_is_refused_before_any_noise_is_sent() {
    let graph = Graph::build(Topology::Path, 2, 0).unwrap();
    let k = keys(2, 3);
    let (mut a, _) = agent(&plan(graph.clone(), setup(1)), 1, k[0].clone());
    let (_, out_b) = agent(&plan(graph, setup(2)), 2, k[1].clone());
    let err = a.handle(0, 2, &out_b[0].payload).unwrap_err();
    assert!(err.to_string().contains("basis seed 2 (this agent uses 1)"), "{err}");
}

#[test]
fn foreign_malformed_and_misplaced_messages_are_refused() {
    let graph = Graph::build(Topology::Path, 3, 0).unwrap();
    let p = plan(graph, setup(1));
    let k = keys(3, 4);
    let (mut a1, out1) = agent(&p, 1, k[0].clone());
    let (mut a2, out2) = agent(&p, 2, k[1].clone());
    // Agent 1 and 3 are not neighbours on the path 1 – 2 – 3.
    let (_, out3) = agent(&p, 3, k[2].clone());
    let err = a1.handle(0, 3, &out3[0].payload).unwrap_err();
    assert!(err.to_string().contains("not a neighbour"), "{err}");
    // Agent 2 answers agent 1's key with noise encrypted under agent 1's key.
    let to_a2 = out1.iter().find(|o| o.to == capelab_core::wire::To::One(2)).unwrap();
    let noise = a2.handle(0, 1, &to_a2.payload).unwrap();
    assert_eq!(noise.len(), 1);
    let original = EfpsnMessage::decode(&noise[0].payload).unwrap();
    let tampered = |edit: &dyn Fn(&mut Vec<capelab_paillier::Ciphertext>, &mut [u8; 16])| {
        let mut msg = original.clone();
        if let Body::Noise { ciphertexts, for_key } = &mut msg.body {
            edit(ciphertexts, for_key);
        }
        msg.encode()
    };
    // Zero, and a value at least n², are not ciphertexts of any key of this size.
    for bytes in [vec![0u8], vec![0xffu8; 256]] {
        let bad = capelab_paillier::Ciphertext::from_be_bytes(&bytes).unwrap();
        let payload = tampered(&|c, _| c[0] = bad.clone());
        let err = a1.handle(0, 2, &payload).unwrap_err().to_string();
        assert!(err.contains("ciphertext 0 refused"), "{err}");
    }
    // Noise encrypted for another key is named as such (a sender's mistake; Paillier itself
    // cannot tell, spec §A1: keys are not authenticated).
    let payload = tampered(&|_, key| key[0] ^= 1);
    let err = a1.handle(0, 2, &payload).unwrap_err().to_string();
    assert!(err.contains("another public key"), "{err}");
    // One ciphertext too many.
    let payload = tampered(&|c, _| c.push(c[0].clone()));
    assert!(a1.handle(0, 2, &payload).unwrap_err().to_string().contains("N_b = 4"));
    // The genuine message still completes agent 1's exchange with agent 2: nothing was lost.
    assert!(a1.handle(0, 2, &noise[0].payload).is_ok());
    // Garbage bytes.
    let err = a1.handle(0, 2, &[0xff, 0x00, 0x13]).unwrap_err();
    assert!(matches!(err, EfpsnError::Protocol(_)), "{err}");
    // An iterate before Phase 1 ended, from a neighbour, for an iteration far ahead.
    let far = EfpsnMessage {
        study: p.study,
        body: Body::Iterate {
            iteration: 3,
            iterate: capelab_core::efpsn::optimizer::Iterate { x: vec![0.0; 10], y: vec![] },
        },
    };
    let err = a1.handle(0, 2, &far.encode()).unwrap_err();
    assert!(err.to_string().contains("iteration 3"), "{err}");
    let _ = out2;
}

#[test]
fn a_neighbour_leaving_is_named_in_either_phase() {
    let graph = Graph::build(Topology::Ring, 3, 0).unwrap();
    let p = plan(graph, setup(1));
    let (mut a1, _) = agent(&p, 1, keys(1, 5).remove(0));
    let err = a1.handle_departure(0, 2).unwrap_err().to_string();
    assert!(err.contains("left during Phase 1") && err.contains("nothing was released"), "{err}");
    assert!(a1.is_finished());

    let problem = Problem::least_squares(3, 20, 10, 1e-3, 1).unwrap();
    let (mut b, _) = EfpsnAgent::start(
        1,
        p.clone(),
        problem.costs[0].clone(),
        MaskSource::NoiseFree,
        1,
        derive(1, "b"),
    )
    .unwrap();
    let err = b.handle_departure(0, 3).unwrap_err().to_string();
    assert!(err.contains("Phase 2 at iteration 0"), "{err}");
}

#[test]
fn bad_parameters_are_refused_before_anything_is_sent() {
    let problem = Problem::least_squares(3, 20, 10, 1e-3, 1).unwrap();
    let graph = Graph::build(Topology::Ring, 3, 0).unwrap();
    for gamma in [0.0, -1.0, f64::NAN] {
        let mut p = plan(graph.clone(), setup(1));
        p.setup.law.gamma = gamma;
        let err = EfpsnAgent::start(
            1,
            p,
            problem.costs[0].clone(),
            MaskSource::NoiseFree,
            1,
            derive(1, "c"),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("γ"), "{err}");
    }
    assert!(
        Graph::from_edges(4, &[(0, 1), (2, 3)]).unwrap_err().to_string().contains("disconnected")
    );
    let mut p = plan(graph, setup(1));
    p.variables = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 50];
    let err =
        EfpsnAgent::start(1, p, problem.costs[0].clone(), MaskSource::NoiseFree, 1, derive(1, "d"))
            .err()
            .unwrap();
    assert!(err.to_string().contains("variable 50"), "{err}");
}
