//! The DPVI-VPD study as roles over the transport seam (spec Part C): parties, aggregator and a
//! separate dealer in one process over a MemoryRoom.

use std::collections::HashSet;

use capelab_core::accountant::{Budget, Ledger};
use capelab_core::driver::Machine;
use capelab_core::link::{LinkKeyPair, open};
use capelab_core::rng::{Seed, derive};
use capelab_core::transport::Transport;
use capelab_core::wire::{ParticipantId, Role, To};
use capelab_vertical_vi::model::generate::adult_like;
use capelab_vertical_vi::model::train;
use capelab_vertical_vi::mpc::circuit::mpc_clipped_sum;
use capelab_vertical_vi::schema::{Cell, PartyBlock, Schema};
use capelab_vertical_vi::study::seal::{Purpose, aad, nonce};
use capelab_vertical_vi::study::sim::StudySim;
use capelab_vertical_vi::study::{
    BatchSampling, Body, Status, VviMessage, VviTask, kind, ring_bytes, step_seed,
};
use capelab_vertical_vi::table::select_rows;

const SEED: u64 = 4;

fn task(schema: &Schema, parties: &[ParticipantId], dealer: ParticipantId, steps: u32) -> VviTask {
    VviTask {
        schema: schema.clone(),
        parties: parties.to_vec(),
        dealer,
        components: 3,
        noise_multiplier: 1.0,
        clip: 1.0,
        sampling: BatchSampling::Poisson,
        batch: 16,
        steps,
        learning_rate: 0.05,
        init_scale: 0.5,
        init_log_sigma: -3.0,
        split_seed: 11,
        test_fraction: 0.2,
        rows: 200,
        delta: 1e-5,
    }
}

fn ledger(_: usize) -> Ledger {
    Ledger::new("party", Budget::new(100.0, 1e-5).unwrap()).unwrap()
}

fn sim(blocks: Vec<PartyBlock>, schema: &Schema, steps: u32) -> StudySim {
    StudySim::start(blocks, ledger, |p, d| task(schema, p, d, steps), SEED).unwrap()
}

fn stopped(s: &Status) -> &str {
    match s {
        Status::Stopped(reason) => reason,
        other => panic!("not stopped: {other:?}"),
    }
}

/// (a) the released posterior is bit for bit `model::train`'s with the MPC engine and the same
/// seeds, and the test NLL falls.
#[test]
fn the_study_reproduces_in_process_training_with_the_mpc_engine() {
    let g = adult_like(200, 7);
    let steps = 30;
    let mut s = sim(g.blocks.clone(), &g.schema, steps);
    let before = s.test_nll();
    let t0 = std::time::Instant::now();
    s.run();
    let elapsed = t0.elapsed();
    assert_eq!(s.refusals(), vec![]);
    assert!(s.finished());
    let released = match s.aggregator.machine.status() {
        Status::Released(r) => r.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(released.steps, steps);
    for status in s.statuses() {
        assert_eq!(status, Status::Released(released.clone()), "every member got the release");
    }
    let after = s.test_nll();

    // the same run in process
    let t = s.aggregator.machine.task().clone();
    let split = t.split();
    let train_blocks: Vec<PartyBlock> =
        g.blocks.iter().map(|b| select_rows(b, &split.train)).collect();
    let mut step = 0u32;
    let mut engine = |pi: &[f64], locals: &[_], clip: f64| {
        step += 1;
        let cfg = t.gradient_config(pi.to_vec());
        assert_eq!(cfg.clip, clip);
        mpc_clipped_sum(locals, &cfg, step_seed(Seed::Fixed(SEED), step)).unwrap().0
    };
    let reference = train::train(
        &g.schema,
        &train_blocks,
        &t.train_config(Seed::Fixed(SEED)),
        &mut engine,
        &mut |_| {},
    );
    assert_eq!(released.posterior, reference.q, "bit-identical to model::train + mpc engine");
    let bytes: usize = s.seen().iter().map(|e| e.payload.len()).sum();
    eprintln!(
        "study: {steps} steps, 2 parties, K = 3, B ≈ 16: test NLL {before:.3} → {after:.3}, \
         ε = {:.3}, {} envelopes, {:.1} MB, {:.2?}",
        released.epsilon,
        s.seen().len(),
        bytes as f64 / 1e6,
        elapsed
    );
    let mut by_kind = std::collections::BTreeMap::<String, usize>::new();
    for e in s.seen() {
        *by_kind.entry(e.kind.clone()).or_default() += e.payload.len();
    }
    eprintln!("study: bytes by kind {by_kind:?}");
    assert!(after < before - 0.1, "test NLL {before} → {after}");
    // one ledger entry per party: the run, recorded before step 1
    for p in &mut s.parties {
        let entries = p.machine.ledger().entries().to_vec();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].event.count(), u64::from(steps));
    }
}

/// (b) the relay sees every envelope, but no payload between parties or from the dealer is
/// readable: no plaintext share appears in any envelope, and a relay that runs its own key
/// agreement with the (public) link keys opens nothing.
#[test]
fn an_eavesdropping_relay_reads_nothing_of_the_mpc() {
    let g = adult_like(200, 8);
    let mut s = sim(g.blocks.clone(), &g.schema, 3);
    s.run();
    assert!(s.finished());
    let seen = s.seen();
    let study = s.aggregator.machine.study();
    let agg = s.aggregator.transport.inner.id();

    // high-entropy plaintext values (random shares, masked openings) as the parties encode them
    // (16 bytes little-endian, `ring_bytes`)
    let mut plain = HashSet::new();
    let mut sent_rounds = 0;
    for p in &s.parties {
        for m in p.machine.transcript() {
            sent_rounds += 1;
            for &v in &m.values {
                if v >> 112 != 0 {
                    plain.insert(v.to_le_bytes().to_vec());
                }
            }
        }
    }
    assert!(plain.len() > 1000, "the transcript holds shares: {}", plain.len());
    let mut rounds = 0;
    for e in &seen {
        assert!(
            e.payload.windows(16).all(|w| !plain.contains(w)),
            "a {} envelope carries a plaintext share",
            e.kind
        );
        if e.kind == kind::ROUND || e.kind == kind::OPENED {
            rounds += 1;
        }
    }
    assert_eq!(rounds, sent_rounds, "every MPC message and share went through the relay sealed");
    // the check is not vacuous: the same scan finds the shares in the plaintext encodings
    let m = &s.parties[0].machine.transcript()[5];
    let enc = ring_bytes(&m.values);
    assert!(enc.windows(16).any(|w| plain.contains(w)));

    // the relay's own key agreement with the public keys it routed does not open anything
    let relay = LinkKeyPair::generate(&mut derive(99, "relay"));
    let mut keys = std::collections::BTreeMap::new();
    for e in seen.iter().filter(|e| e.kind == kind::KEY) {
        if let Body::Key { public } = VviMessage::decode(&e.payload).unwrap().body {
            keys.insert(e.from, public);
        }
    }
    assert_eq!(keys.len(), 3, "two parties and the dealer published keys");
    let mut tried = 0;
    for e in &seen {
        let To::One(to) = e.to else { continue };
        let (purpose, step, round, sealed) = match VviMessage::decode(&e.payload).unwrap().body {
            Body::Round { step, round, sealed } => (Purpose::Round, step, round, sealed),
            Body::Triples { step, sealed } => (Purpose::Triples, step, 0, sealed),
            Body::Opened { step, sealed } => (Purpose::Opened, step, 0, sealed),
            _ => continue,
        };
        let a = aad(&study, purpose, step, round, e.from, to);
        for public in keys.values() {
            for (f, t) in [(e.from, to), (to, e.from)] {
                let k = relay.link_key(public, &study.0, f, t).unwrap();
                assert!(open(&k, nonce(purpose, step, round), &a, &sealed).is_none());
            }
        }
        tried += 1;
    }
    assert!(tried > 100, "{tried}");
    assert!(seen.iter().all(|e| e.from != agg || e.kind != kind::ROUND));
}

/// (c) a party leaving mid-run stops every role with a reason naming it; nothing more is
/// opened; the parties' ledgers hold only the run recorded before step 1. The dealer leaving
/// before step 1: nothing is recorded anywhere.
#[test]
fn a_departure_stops_every_role_naming_who_left() {
    let g = adult_like(200, 9);
    let mut s = sim(g.blocks.clone(), &g.schema, 30);
    while s.aggregator.machine.steps_done() < 3 {
        s.aggregator.pump(0);
        for p in &mut s.parties {
            p.pump(0);
        }
        s.dealer.pump(0);
    }
    let leaver = s.parties[1].transport.inner.id();
    s.room.disconnect(leaver);
    s.run();
    assert_eq!(s.refusals(), vec![]);
    let name = format!("party 1 (participant {leaver}) left");
    assert!(stopped(s.aggregator.machine.status()).contains(&name));
    assert!(stopped(s.parties[0].machine.status()).contains(&name));
    assert!(stopped(s.dealer.machine.status()).contains(&name));
    let done = s.aggregator.machine.steps_done();
    assert!((3..30).contains(&done), "{done}");
    assert_eq!(s.parties[0].machine.ledger().entries().len(), 1);
    // nothing was opened after the departure
    let opened = s.seen().iter().filter(|e| e.kind == kind::OPENED).count();
    assert!(opened <= 2 * (done as usize + 1), "{opened} shares for {done} steps");

    let mut s = sim(g.blocks.clone(), &g.schema, 30);
    let dealer = s.dealer.transport.inner.id();
    s.room.disconnect(dealer);
    s.run();
    let name = format!("the dealer (participant {dealer}) left");
    assert!(stopped(s.aggregator.machine.status()).contains(&name));
    for p in &mut s.parties {
        assert!(stopped(p.machine.status()).contains(&name));
        assert!(p.machine.ledger().entries().is_empty(), "nothing released, nothing recorded");
    }
    assert!(s.seen().iter().all(|e| e.kind != kind::ROUND && e.kind != kind::OPENED));
}

/// The teacher's Stop on the dashboard: every member stops, naming the aggregator and the reason.
#[test]
fn the_aggregator_aborting_stops_every_member_with_its_reason() {
    let g = adult_like(200, 9);
    let mut s = sim(g.blocks.clone(), &g.schema, 30);
    while s.aggregator.machine.steps_done() < 2 {
        s.aggregator.pump(0);
        for p in &mut s.parties {
            p.pump(0);
        }
        s.dealer.pump(0);
    }
    let out = s.aggregator.machine.abort("the teacher stopped it");
    s.aggregator.send(0, out);
    s.run();
    assert_eq!(s.refusals(), vec![]);
    for status in s.statuses() {
        let reason = stopped(&status);
        assert!(reason.contains("the aggregator") && reason.contains("the teacher stopped it"));
    }
}

/// (d) a bad task or a party's table that does not fit it is refused naming the problem; the run
/// stops everywhere before anything of the data leaves.
#[test]
fn bad_tasks_and_tables_are_refused_naming_the_problem() {
    let g = adult_like(200, 10);
    // party 1 holds fewer rows
    let mut blocks = g.blocks.clone();
    blocks[1] = select_rows(&blocks[1], &(0..150).collect::<Vec<_>>());
    let mut s = sim(blocks, &g.schema, 5);
    s.run();
    let party1 = s.parties[1].transport.inner.id();
    for status in s.statuses() {
        let reason = stopped(&status);
        assert!(reason.contains("holds 150 rows, the task needs N = 200"), "{reason}");
        assert!(reason.contains(&format!("party 1 (participant {party1})")), "{reason}");
    }
    for p in &mut s.parties {
        assert!(p.machine.ledger().entries().is_empty());
    }
    assert!(s.seen().iter().all(|e| e.kind != kind::ROUND && e.kind != kind::TRIPLES));

    // an unknown category in party 0's table
    let mut blocks = g.blocks.clone();
    let j = blocks[0].features;
    let cell = blocks[0].cells.iter().position(|c| matches!(c, Cell::Category(_))).unwrap();
    blocks[0].cells[cell] = Cell::Category(99);
    let mut s = sim(blocks, &g.schema, 5);
    s.run();
    let reason = stopped(s.aggregator.machine.status());
    assert!(reason.contains("unknown category 99"), "{reason}");
    assert!(reason.contains(&format!("row {}", cell / j + 1)), "rows count from 1: {reason}");

    // the aggregator refuses a task it cannot run, naming the problem
    let bad = |edit: &dyn Fn(&mut VviTask), want: &str| {
        let r = StudySim::start(
            g.blocks.clone(),
            ledger,
            |p, d| {
                let mut t = task(&g.schema, p, d, 5);
                edit(&mut t);
                t
            },
            SEED,
        );
        let err = r.err().expect("refused").to_string();
        assert!(err.contains(want), "{err} does not name {want}");
    };
    bad(&|t| t.dealer = t.parties[0], "is also a party");
    bad(&|t| t.parties.pop().map(|_| ()).unwrap(), "1 party ids for a schema of 2 parties");
    bad(&|t| t.noise_multiplier = 0.0, "must add noise");
    bad(&|t| t.batch = 1000, "batch B = 1000");
    bad(&|t| t.components = 0, "K = 0");
    bad(
        &|t| {
            if let capelab_vertical_vi::schema::FeatureKind::Categorical { labels } =
                &mut t.schema.parties[0].features[1].kind
            {
                labels.push(labels[0].clone());
            }
        },
        "twice",
    );
}

/// (d′) a party whose block could not be read (its file did not fit the announced schema) declines
/// the task with the reason it was given: every member stops naming it, no key, triple or round
/// leaves, and no ledger records anything.
#[test]
fn a_party_without_a_usable_block_declines_with_its_reason() {
    use capelab_vertical_vi::study::Party;
    let g = adult_like(200, 10);
    let mut s = sim(g.blocks.clone(), &g.schema, 5);
    let (me, agg) = (s.parties[0].transport.inner.id(), s.aggregator.transport.inner.id());
    let why = "its file: column 'sex', row 7: not one of the public labels";
    s.parties[0].machine =
        Party::new(me, agg, g.blocks[0].clone(), ledger(0), Seed::Fixed(SEED)).refusing(why.into());
    s.run();
    for status in s.statuses() {
        let reason = stopped(&status);
        assert!(
            reason.contains(&format!("party 0 (participant {me}) refused the run")),
            "{reason}"
        );
        assert!(reason.contains(why), "{reason}");
    }
    for p in &mut s.parties {
        assert!(p.machine.ledger().entries().is_empty());
    }
    let seen = s.seen();
    let sent_by_party0: Vec<&str> =
        seen.iter().filter(|e| e.from == me).map(|e| e.kind.as_str()).collect();
    assert!(sent_by_party0.iter().all(|k| *k == kind::STOP), "{sent_by_party0:?}");
    assert!(seen.iter().all(|e| e.kind != kind::ROUND && e.kind != kind::TRIPLES));
}

/// (e) messages from a participant outside the run are refused naming it, and change nothing.
#[test]
fn a_participant_outside_the_run_is_refused() {
    let g = adult_like(200, 12);
    let mut s = sim(g.blocks.clone(), &g.schema, 4);
    let mut mallory = s.room.join(Role::Site, "mallory");
    let study = s.aggregator.machine.study();
    let fake =
        VviMessage { study, body: Body::Step { step: 1, theta: vec![0.5; 10], batch: vec![0, 1] } };
    let key = VviMessage { study, body: Body::Key { public: [7; 32] } };
    s.run(); // let the members take the task first
    let _ = s.parties[0].transport.inner.id();
    for to in [
        s.parties[0].transport.inner.id(),
        s.aggregator.transport.inner.id(),
        s.dealer.transport.inner.id(),
    ] {
        mallory.send(To::One(to), kind::STEP, &fake.encode()).unwrap();
        mallory.send(To::One(to), kind::KEY, &key.encode()).unwrap();
    }
    mallory.send(To::All, "vvi/garbage", &[0xff, 0x00, 0x13]).unwrap();
    s.run();
    let refusals = s.refusals();
    let outsider = format!("participant {}, who is not in this run", mallory.id());
    let named = refusals.iter().filter(|(_, e)| e.to_string().contains(&outsider)).count();
    assert_eq!(named, 6, "{refusals:?}");
    let malformed = refusals.iter().filter(|(_, e)| e.to_string().contains("malformed")).count();
    assert_eq!(malformed, 4, "the garbage reached every role and was refused: {refusals:?}");
    assert!(s.finished());
    assert!(matches!(s.aggregator.machine.status(), Status::Released(_)));
    assert!(s.parties.iter().all(|p| p.machine.is_finished()));
}
