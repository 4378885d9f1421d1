//! The MPC layer against its plaintext references (spec B3 step 3, Part C, Part D).

use std::sync::Arc;

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::{PartyLocal, clipped_sum_plain};
use capelab_vertical_vi::mpc::circuit::{
    fixed_clipped_sum, gradient_program, mpc_clipped_sum, party_inputs,
};
use capelab_vertical_vi::mpc::dealer::deal_program;
use capelab_vertical_vi::mpc::fixed::run_fixed;
use capelab_vertical_vi::mpc::noise::sample_discrete_gaussian;
use capelab_vertical_vi::mpc::program::{Builder, Program};
use capelab_vertical_vi::mpc::ring::{
    FRAC_BITS, SCALE, decode, encode, encode_all, reconstruct, share,
};
use capelab_vertical_vi::mpc::run::run_in_process;
use capelab_vertical_vi::mpc::{GradientConfig, Message, MpcError, MpcParty, Shape, Step};
use rand::RngExt;

fn unif(rng: &mut impl rand::Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.random::<f64>()
}

/// Runs a 2-party program whose inputs are one vector per party, by MPC and in plaintext.
fn both(prog: &Program, x: &[u128], y: &[u128], seed: u64) -> (Vec<u128>, Vec<u128>) {
    let inputs = vec![vec![x.to_vec()], vec![y.to_vec()]];
    let mpc = run_in_process(prog, inputs.clone(), Seed::Fixed(seed), false).unwrap().output;
    let fixed = run_fixed(prog, inputs, &mut derive(seed, "fixed")).unwrap();
    (mpc, fixed)
}

#[test]
fn share_reconstruct_and_encoding_errors() {
    let mut rng = derive(1, "t");
    for &x in &[0.0, -1.5, 3.25e6, -7.0e-9, 12345.678] {
        let v = encode(x).unwrap();
        let s = share(v, 3, &mut rng).unwrap();
        assert_eq!(reconstruct(&s), v);
        assert!((decode(v) - x).abs() <= 0.5 / SCALE);
    }
    assert_eq!(encode(-0.5).unwrap() as i128, -(1i128 << 31));
    assert!(matches!(encode(f64::NAN), Err(MpcError::NotFinite { .. })));
    assert!(matches!(encode(f64::INFINITY), Err(MpcError::NotFinite { .. })));
    assert!(matches!(encode(2f64.powi(41)), Err(MpcError::OutOfRange { .. })));
    let msg = encode(f64::NAN).unwrap_err().to_string();
    assert!(msg.contains("not a finite number"), "{msg}");
}

#[test]
fn beaver_product_and_truncation_bound() {
    let mut rng = derive(2, "data");
    let n = 500;
    let xs: Vec<f64> = (0..n).map(|_| unif(&mut rng, -1000.0, 1000.0)).collect();
    let ys: Vec<f64> = (0..n).map(|_| unif(&mut rng, -1000.0, 1000.0)).collect();
    let (x, y) = (encode_all(&xs).unwrap(), encode_all(&ys).unwrap());
    let mut b = Builder::new(2);
    let (a, c) = (b.input(0, n), b.input(1, n));
    let raw = b.mul(a, c);
    let t = b.trunc(raw);
    let both_ = b.concat(&[raw, t]);
    b.open(both_);
    let prog = b.finish();
    let (mpc, fixed) = both(&prog, &x, &y, 3);
    for i in 0..n {
        let exact = x[i].wrapping_mul(y[i]);
        assert_eq!(mpc[i], exact, "Beaver product is exact in the ring");
        let floor = (exact as i128) >> FRAC_BITS;
        let err = mpc[n + i] as i128 - floor;
        assert!(err == 0 || err == 1, "truncation error {err} ulp");
        assert_eq!(fixed[n + i] as i128, floor);
        assert!(
            (decode(mpc[n + i]) - xs[i] * ys[i]).abs()
                < 2e-6 * (1.0 + (xs[i] * ys[i]).abs()) + 1e-6
        );
    }
}

/// Σ_n w_nk·x^b_nkj for private matrices of two owners out of three parties (party 0 owns
/// none) equals the direct product, in MPC and in plaintext; each private matrix travels once,
/// masked, from its owner, and the other parties send only their share of W.
#[test]
fn owned_mat_vec_is_the_direct_product_and_sends_each_matrix_once() {
    let (rows, k, widths) = (7usize, 3usize, [2usize, 5]);
    let mut rng = derive(12, "data");
    let w: Vec<f64> = (0..rows * k).map(|_| unif(&mut rng, -2.0, 2.0)).collect();
    let xs: Vec<Vec<f64>> = widths
        .iter()
        .map(|e| (0..rows * k * e).map(|_| unif(&mut rng, -3.0, 3.0)).collect())
        .collect();
    let mut b = Builder::new(3);
    let wr = b.input(0, rows * k);
    let x1 = b.private(1, rows * k * widths[0]);
    let x2 = b.private(2, rows * k * widths[1]);
    let y = b.owned_mat_vec(wr, k, &[(1, x1), (2, x2)]);
    let y = b.concat(&y);
    let y = b.trunc(y);
    b.open(y);
    let prog = b.finish();
    let inputs = vec![
        vec![encode_all(&w).unwrap()],
        vec![encode_all(&xs[0]).unwrap()],
        vec![encode_all(&xs[1]).unwrap()],
    ];
    let mpc = run_in_process(&prog, inputs.clone(), Seed::Fixed(5), false).unwrap();
    let fixed = run_fixed(&prog, inputs, &mut derive(5, "fixed")).unwrap();
    let mut want = Vec::new();
    for (x, &e) in xs.iter().zip(&widths) {
        for kk in 0..k {
            for j in 0..e {
                want.push((0..rows).map(|n| w[n * k + kk] * x[(n * k + kk) * e + j]).sum::<f64>());
            }
        }
    }
    for (got, label) in [(&mpc.output, "mpc"), (&fixed, "fixed")] {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert!((decode(*g) - w).abs() < 1e-8, "{label}: {} vs {w}", decode(*g));
        }
    }
    // round 0 a seed each, then W (rows·K) from everyone plus the owner's Δ, then the
    // truncation (a round with three parties) and the opening; every message goes to both others
    let out = want.len();
    let sent = |own: usize| 2 * 16 * (2 + rows * k + own + 2 * out);
    assert_eq!(
        mpc.bytes_sent,
        vec![sent(0), sent(rows * k * widths[0]), sent(rows * k * widths[1])]
    );
}

#[test]
fn reciprocal_over_its_range_including_the_ends() {
    let (lo, hi) = (2f64.powi(-10), 2f64.powi(8));
    let mut rng = derive(4, "recip");
    let mut bs = vec![lo, hi, lo * 1.0001, hi * 0.9999, 1.0];
    for _ in 0..200 {
        bs.push(2f64.powf(unif(&mut rng, -10.0, 8.0)));
    }
    let n = bs.len();
    let x = encode_all(&bs).unwrap();
    let mut b = Builder::new(2);
    let (a, z) = (b.input(0, n), b.input(1, n));
    let s = b.add(a, z);
    let q = b.recip(s, lo, hi);
    b.open(q);
    let prog = b.finish();
    let (mpc, fixed) = both(&prog, &x, &vec![0; n], 5);
    let mut worst: f64 = 0.0;
    for i in 0..n {
        let want = 1.0 / decode(x[i]);
        for got in [decode(mpc[i]), decode(fixed[i])] {
            worst = worst.max(((got - want) / want).abs());
        }
    }
    assert!(worst < 1e-6, "worst relative error {worst}");
    eprintln!(
        "recip: worst relative error {worst:.2e} over [2^-10, 2^8], {} rounds",
        prog.rounds()
    );
}

/// u → (u^{-1/2}, [u ≥ 1]) the way the circuit computes it.
fn rsqrt_program(n: usize, m: usize) -> Program {
    let mut b = Builder::new(2);
    let (a, z) = (b.input(0, n), b.input(1, n));
    let u = b.add(a, z);
    let hu = b.mul_const(u, vec![encode(0.5).unwrap()]);
    let hu = b.trunc(hu);
    let u_rep = b.gather(u, (0..n * (m + 1)).map(|i| (i / (m + 1)) as u32).collect());
    let pow =
        b.constant((0..n).flat_map(|_| (0..=m).map(|j| (1u128 << (2 * j)) << FRAC_BITS)).collect());
    let x = b.sub(u_rep, pow);
    let t = b.geq_zero(x, FRAC_BITS + 2 * (m as u32 + 1) + 2);
    let y = b.rsqrt(hu, t, m);
    let t0 = b.gather(t, (0..n).map(|i| (i * (m + 1)) as u32).collect());
    let out = b.concat(&[y, t0]);
    b.open(out);
    b.finish()
}

#[test]
fn inverse_square_root_over_its_range() {
    let m = 10;
    let top = 4f64.powi(m as i32 + 1);
    let mut rng = derive(6, "rsqrt");
    let mut us = vec![1.0, top * 0.99999, 4.0, 4.0 - 1e-6, 1024.0];
    for _ in 0..100 {
        us.push(2f64.powf(unif(&mut rng, 0.0, 2.0 * (m as f64 + 1.0))));
    }
    us.extend([0.0, 0.25, 0.999]);
    let n = us.len();
    let x = encode_all(&us).unwrap();
    let prog = rsqrt_program(n, m);
    let (mpc, fixed) = both(&prog, &x, &vec![0; n], 7);
    let mut worst: f64 = 0.0;
    for i in 0..n {
        let u = decode(x[i]);
        assert_eq!(mpc[n + i], (u >= 1.0) as u128, "clip bit for u = {u}");
        assert_eq!(fixed[n + i], (u >= 1.0) as u128);
        if u >= 1.0 {
            let want = 1.0 / u.sqrt();
            for got in [decode(mpc[i]), decode(fixed[i])] {
                worst = worst.max((got - want).abs() / (want + 2f64.powi(-31) / 1e-6));
            }
        } else {
            assert!(decode(mpc[i]).abs() < 10.0, "finite below the range");
        }
    }
    // relative 1e-6, or 2 ulps (2^-31) absolute where y is so small that this dominates
    assert!(worst < 1e-6, "worst relative error {worst}");
    eprintln!("rsqrt: worst error / (1e-6·y + 2^-31) = {:.2} over [1, 4^11)", worst / 1e-6);
}

#[test]
fn comparison_on_random_signed_values() {
    let bits = 56;
    let mut rng = derive(8, "cmp");
    let mut vals: Vec<i128> = vec![0, -1, 1, (1 << 55) - 1, -(1 << 55), -(1 << 55) + 1];
    for _ in 0..300 {
        let mag = rng.random::<u64>() as i128 >> (8 + rng.random_range(0..40u32));
        vals.push(if rng.random::<bool>() { mag } else { -mag });
    }
    let n = vals.len();
    let x: Vec<u128> = vals.iter().map(|&v| v as u128).collect();
    // party 1 holds a random offset, so neither input alone is the value compared
    let off: Vec<u128> = (0..n).map(|_| rng.random::<u64>() as u128).collect();
    let xa: Vec<u128> = x.iter().zip(&off).map(|(a, o)| a.wrapping_sub(*o)).collect();
    let mut b = Builder::new(2);
    let (a, z) = (b.input(0, n), b.input(1, n));
    let s = b.add(a, z);
    let t = b.geq_zero(s, bits);
    b.open(t);
    let prog = b.finish();
    let (mpc, fixed) = both(&prog, &xa, &off, 9);
    for i in 0..n {
        let want = (vals[i] >= 0) as u128;
        assert_eq!(mpc[i], want, "[{} ≥ 0]", vals[i]);
        assert_eq!(fixed[i], want);
    }
}

/// Random party-local results: even examples are "small" (equal mat, small dlog: ‖g‖ below C),
/// odd ones random (‖g‖ above C).
fn random_locals(
    widths: &[usize],
    k: usize,
    batch: usize,
    seed: u64,
) -> (Vec<f64>, Vec<PartyLocal>) {
    let mut rng = derive(seed, "locals");
    let raw: Vec<f64> = (0..k).map(|_| unif(&mut rng, 0.5, 1.5)).collect();
    let pi: Vec<f64> = raw.iter().map(|r| r / raw.iter().sum::<f64>()).collect();
    let parties = widths
        .iter()
        .map(|&w| {
            let mut mat = Vec::new();
            let mut dlog = Vec::new();
            for n in 0..batch {
                let small = n % 2 == 0;
                for _ in 0..k {
                    mat.push(if small {
                        unif(&mut rng, 0.9, 1.1)
                    } else {
                        unif(&mut rng, 0.05, 3.0)
                    });
                    for _ in 0..w {
                        dlog.push(if small {
                            unif(&mut rng, -0.1, 0.1)
                        } else {
                            unif(&mut rng, -3.0, 3.0)
                        });
                    }
                }
            }
            PartyLocal { batch, components: k, width: w, mat, dlog }
        })
        .collect();
    (pi, parties)
}

fn example_norms(pi: &[f64], parties: &[PartyLocal]) -> Vec<f64> {
    let b = parties[0].batch;
    (0..b)
        .map(|n| {
            let one: Vec<PartyLocal> = parties
                .iter()
                .map(|p| {
                    let k = p.components;
                    PartyLocal {
                        batch: 1,
                        components: k,
                        width: p.width,
                        mat: p.mat[n * k..(n + 1) * k].to_vec(),
                        dlog: p.dlog[n * k * p.width..(n + 1) * k * p.width].to_vec(),
                    }
                })
                .collect();
            let g = clipped_sum_plain(pi, &one, 1e9);
            g.iter().map(|v| v * v).sum::<f64>().sqrt()
        })
        .collect()
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / norm
}

fn circuit_matches(widths: &[usize], seed: u64) {
    let (k, batch, clip) = (5, 20, 2.5);
    let (pi, parties) = random_locals(widths, k, batch, seed);
    let norms = example_norms(&pi, &parties);
    let clipped = norms.iter().filter(|&&v| v > clip).count();
    assert!(clipped >= 5 && clipped <= batch - 5, "norms {norms:?}");
    let cfg = GradientConfig::new(pi.clone(), clip, 0.0);
    let plain = clipped_sum_plain(&pi, &parties, clip);
    let fixed = fixed_clipped_sum(&parties, &cfg, &mut derive(seed, "f")).unwrap();
    let (mpc, report) = mpc_clipped_sum(&parties, &cfg, Seed::Fixed(seed)).unwrap();
    assert_eq!(mpc.len(), k - 1 + k * widths.iter().sum::<usize>());
    let (mf, fp) = (max_rel(&mpc, &fixed), max_rel(&fixed, &plain));
    assert!(mf < 2f64.powi(-20), "mpc vs fixed {mf:e}");
    assert!(fp < 1e-6, "fixed vs plain {fp:e}");
    eprintln!(
        "P = {}: {clipped}/{batch} clipped; |mpc − fixed|/‖G‖ = {mf:.2e}, |fixed − plain|/‖G‖ = {fp:.2e}; {} rounds, bytes sent {:?}",
        widths.len(),
        report.rounds,
        report.bytes_sent
    );
}

/// Per-example clip factors across the inverse square root's whole range (‖g‖/C from below 1 to
/// about 2^10): every start level of the comparison is used.
#[test]
fn clip_over_every_level_matches_plain() {
    let (k, batch) = (5, 40);
    let (pi, parties) = random_locals(&[3, 4], k, batch, 21);
    let norms = example_norms(&pi, &parties);
    let top = norms.iter().copied().fold(0.0, f64::max);
    for clip in [top * 2.0, top / 3.0, top / 40.0, top / 300.0, top / 1500.0] {
        let cfg = GradientConfig::new(pi.clone(), clip, 0.0);
        let plain = clipped_sum_plain(&pi, &parties, clip);
        let fixed = fixed_clipped_sum(&parties, &cfg, &mut derive(1, "f")).unwrap();
        let (mpc, _) = mpc_clipped_sum(&parties, &cfg, Seed::Fixed(3)).unwrap();
        let (mf, fp) = (max_rel(&mpc, &fixed), max_rel(&fixed, &plain));
        assert!(mf < 2f64.powi(-20), "C = {clip}: mpc vs fixed {mf:e}");
        assert!(fp < 1e-6, "C = {clip}: fixed vs plain {fp:e}");
    }
}

#[test]
fn circuit_two_parties_matches_fixed_and_plain() {
    circuit_matches(&[3, 4], 10);
}

#[test]
fn circuit_three_parties_matches_fixed_and_plain() {
    circuit_matches(&[2, 3, 1], 11);
}

#[test]
fn fixed_reports_overflow_instead_of_garbage() {
    let (pi, mut parties) = random_locals(&[2, 2], 3, 4, 12);
    parties[0].mat[0] = 1.0e6;
    parties[1].mat[0] = 1.0e6;
    let cfg = GradientConfig::new(pi, 1.0, 0.0);
    let err = fixed_clipped_sum(&parties, &cfg, &mut derive(1, "f")).unwrap_err();
    assert!(matches!(err, MpcError::Overflow { .. }), "{err}");
}

fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

#[test]
fn discrete_gaussian_moments() {
    // N = 20000: mean within 4σ/√N; variance within 4·√(2/N) ≈ 4% (plus lattice effects at 0.5)
    let n = 20_000;
    let mut rng = derive(13, "dg");
    for &var in &[0.5, 10.0, 2f64.powi(40)] {
        let xs: Vec<f64> =
            (0..n).map(|_| sample_discrete_gaussian(var, &mut rng).unwrap() as f64).collect();
        let (m, v) = moments(&xs);
        let sd = var.sqrt();
        assert!(m.abs() < 4.0 * sd / (n as f64).sqrt(), "σ² = {var}: mean {m}");
        // for σ² = 0.5 the discrete Gaussian's variance is slightly below σ² (≈ 0.4996)
        assert!((v / var - 1.0).abs() < 4.0 * (2.0 / n as f64).sqrt(), "σ² = {var}: variance {v}");
        eprintln!("σ² = {var}: mean {m:.4}, variance / σ² = {:.4}", v / var);
    }
    assert_eq!(sample_discrete_gaussian(0.0, &mut rng).unwrap(), 0);
    assert!(matches!(
        sample_discrete_gaussian(f64::NAN, &mut rng),
        Err(MpcError::NoiseVariance { .. })
    ));
    // three parties' shares at σ²/3 sum to variance σ²
    let target = 30.0;
    let sums: Vec<f64> = (0..n)
        .map(|_| {
            (0..3).map(|_| sample_discrete_gaussian(target / 3.0, &mut rng).unwrap()).sum::<i128>()
                as f64
        })
        .collect();
    let (m, v) = moments(&sums);
    assert!(m.abs() < 4.0 * target.sqrt() / (n as f64).sqrt());
    assert!(
        (v / target - 1.0).abs() < 4.0 * (2.0 / n as f64).sqrt(),
        "sum of shares: variance {v}"
    );
}

#[test]
fn noisy_run_adds_noise_of_the_right_scale() {
    let (pi, parties) = random_locals(&[3, 2], 4, 10, 14);
    let (clip, sigma) = (2.5, 2.0);
    let plain = clipped_sum_plain(&pi, &parties, clip);
    let cfg = GradientConfig::new(pi, clip, sigma);
    let mut devs = Vec::new();
    for s in 0..8 {
        let (g, _) = mpc_clipped_sum(&parties, &cfg, Seed::Fixed(100 + s)).unwrap();
        devs.extend(g.iter().zip(&plain).map(|(a, b)| a - b));
    }
    let (_, v) = moments(&devs);
    let want = (clip * sigma).powi(2);
    assert!((v / want - 1.0).abs() < 0.25, "noise variance {v}, want {want}");
}

fn tiny_parties() -> (Arc<Program>, Vec<MpcParty>) {
    let mut b = Builder::new(2);
    let (x, y) = (b.input(0, 3), b.input(1, 3));
    let z = b.fmul(x, y);
    b.open(z);
    let prog = Arc::new(b.finish());
    let mat = deal_program(&prog, &mut derive(1, "dealer"));
    let parties = mat
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            MpcParty::new(
                i,
                Arc::clone(&prog),
                m,
                vec![encode_all(&[1.0, 2.0, -3.0]).unwrap()],
                derive(1, &format!("p{i}")),
            )
            .unwrap()
        })
        .collect();
    (prog, parties)
}

/// The dealer sends party 0 a seed only and party 1 a seed plus the derived values; material of
/// the wrong shape or for another party is refused.
#[test]
fn seeded_dealer_material_is_small_and_checked() {
    let (pi, parties) = random_locals(&[3, 4], 5, 20, 31);
    let cfg = GradientConfig::new(pi, 2.5, 0.0);
    let prog = Arc::new(gradient_program(&Shape::of(&parties).unwrap(), &cfg).unwrap());
    let mat = deal_program(&prog, &mut derive(2, "dealer"));
    assert_eq!(mat[0].values(), 2, "party 0: the seed");
    let mults: usize = prog
        .ops
        .iter()
        .map(|o| match o {
            capelab_vertical_vi::mpc::program::Op::Mul { a, .. } => prog.lens[*a],
            _ => 0,
        })
        .sum();
    assert!(mat[1].values() > mults, "party 1: at least every product's c");
    let inputs: Vec<Vec<Vec<u128>>> = parties.iter().map(|p| party_inputs(p).unwrap()).collect();
    let make =
        |i: usize, m| MpcParty::new(i, Arc::clone(&prog), m, inputs[i].clone(), derive(1, "p"));
    // party 1's material given to party 0, and a truncated field
    assert!(matches!(make(0, mat[1].clone()), Err(MpcError::BadInput { .. })));
    let mut short = mat[1].clone();
    let at = short.ops.iter().position(|m| *m != Default::default()).unwrap();
    short.ops[at] = Default::default();
    let e = make(1, short).unwrap_err().to_string();
    assert!(e.contains("dealer material"), "{e}");
    assert!(make(0, mat[0].clone()).is_ok() && make(1, mat[1].clone()).is_ok());
}

#[test]
fn malformed_messages_are_refused_by_name() {
    let (_, mut ps) = tiny_parties();
    let m0 = ps[0].start().unwrap();
    let m1 = ps[1].start().unwrap();
    let good = m1[0].clone();
    let with = |f: &dyn Fn(&mut Message)| {
        let mut m = good.clone();
        f(&mut m);
        vec![m]
    };
    let p0 = &mut ps[0];
    assert_eq!(
        p0.receive(with(&|m| m.round = 7)),
        Err(MpcError::WrongRound { expected: 0, got: 7 })
    );
    assert_eq!(
        p0.receive(with(&|m| m.from = 5)),
        Err(MpcError::UnknownParty { from: 5, parties: 2 })
    );
    assert_eq!(p0.receive(with(&|m| m.to = 1)), Err(MpcError::WrongRecipient { to: 1, me: 0 }));
    assert_eq!(
        p0.receive(with(&|m| m.values.pop().map(drop).unwrap())),
        Err(MpcError::WrongLength { from: 1, expected: 2, got: 1 }) // round 0: a seed
    );
    assert_eq!(
        p0.receive(vec![good.clone(), good.clone()]),
        Err(MpcError::DuplicateSender { from: 1 })
    );
    assert_eq!(p0.receive(vec![]), Err(MpcError::MissingSender { from: 1 }));
    let e = p0.receive(with(&|m| m.round = 7)).unwrap_err().to_string();
    assert!(e.contains("round 7"), "{e}");
    // refusals leave the state intact: the genuine round still runs to the right product
    let (mut a, mut b) = (m0, vec![good]);
    loop {
        let (sa, sb) = (ps[1].receive(a).unwrap(), ps[0].receive(b).unwrap());
        match (sa, sb) {
            (Step::Send(x), Step::Send(y)) => {
                a = y;
                b = x;
            }
            (Step::Done(x), Step::Done(y)) => {
                assert_eq!(x, y);
                let got: Vec<f64> = x.iter().map(|&v| decode(v)).collect();
                for (g, w) in got.iter().zip([1.0, 4.0, 9.0]) {
                    assert!((g - w).abs() < 1e-9);
                }
                break;
            }
            other => panic!("parties out of step: {other:?}"),
        }
    }
    assert!(matches!(ps[0].receive(vec![]), Err(MpcError::OutOfOrder { .. })));
}

/// Top-byte histogram.
fn hist(vals: &[u128]) -> Vec<f64> {
    let mut h = vec![0.0; 16];
    for v in vals {
        h[(v >> 124) as usize] += 1.0;
    }
    h
}

#[test]
fn party_zero_view_is_independent_of_party_one_input() {
    let (pi, parties) = random_locals(&[3, 2], 4, 10, 15);
    let mut other = parties.clone();
    for v in other[1].mat.iter_mut() {
        *v = 0.01 + (*v * 7.3) % 2.0;
    }
    for v in other[1].dlog.iter_mut() {
        *v = -*v * 5.0;
    }
    let cfg = GradientConfig::new(pi.clone(), 2.5, 0.0);
    let prog = gradient_program(&Shape::of(&parties).unwrap(), &cfg).unwrap();
    // independent randomness in the two runs, so the comparison is between distributions
    let run = |ps: &[PartyLocal], seed| {
        let inputs = ps.iter().map(|p| party_inputs(p).unwrap()).collect();
        run_in_process(&prog, inputs, Seed::Fixed(seed), true).unwrap()
    };
    let (ra, rb) = (run(&parties, 77), run(&other, 78));
    // per round: what party 0 learns (its broadcast + party 1's), all but the final opening
    let openings = |r: &capelab_vertical_vi::mpc::run::RunReport| -> (Vec<u128>, Vec<u128>) {
        let mut all = Vec::new();
        let mut last = Vec::new();
        for (s, g) in r.sent_by_0.iter().zip(&r.received_by_0).skip(1) {
            assert_eq!((s.round, s.to, g.from), (g.round, 1, 1));
            last = s.values.iter().zip(&g.values).map(|(a, b)| a.wrapping_add(*b)).collect();
            all.extend(last.iter().copied());
        }
        let n = all.len() - last.len();
        all.truncate(n);
        (all, last)
    };
    let ((oa, fa), (ob, fb)) = (openings(&ra), openings(&rb));
    // the only unmasked opening is G̃ itself
    assert_eq!(fa, ra.output);
    assert_eq!(fb, rb.output);
    assert_ne!(ra.output, rb.output);
    // received shares: uniform top nibble, in both runs (χ², 15 df; 60 is far in the tail)
    let recv = |r: &capelab_vertical_vi::mpc::run::RunReport| -> Vec<u128> {
        r.received_by_0.iter().flat_map(|m| m.values.iter().copied()).collect()
    };
    let (va, vb) = (recv(&ra), recv(&rb));
    assert_eq!(va.len(), vb.len());
    assert_ne!(va, vb, "the inputs do change the messages");
    for v in [&va, &vb] {
        let h = hist(v);
        let e = v.len() as f64 / 16.0;
        let chi: f64 = h.iter().map(|o| (o - e) * (o - e) / e).sum();
        assert!(chi < 60.0, "received values not uniform: χ² = {chi}");
    }
    // the masked openings: same distribution whichever input party 1 holds (two-sample χ²)
    assert_eq!(oa.len(), ob.len());
    let (ha, hb) = (hist(&oa), hist(&ob));
    let chi: f64 = ha
        .iter()
        .zip(&hb)
        .filter(|(a, b)| **a + **b > 0.0)
        .map(|(a, b)| (a - b) * (a - b) / (a + b))
        .sum();
    assert!(chi < 60.0, "openings depend on party 1's input: χ² = {chi}");
    eprintln!(
        "view: {} received values, {} masked openings, two-sample χ² = {chi:.1}",
        va.len(),
        oa.len()
    );
}

#[test]
#[ignore = "timing: cargo test --release -p capelab-vertical-vi --test mpc -- --ignored --nocapture"]
fn timing_two_parties_k20_b100() {
    let (pi, parties) = random_locals(&[20, 4], 20, 100, 16);
    let cfg = GradientConfig::new(pi.clone(), 1.0, 2.042);
    let shape = Shape::of(&parties).unwrap();
    let t0 = std::time::Instant::now();
    let (g, report) = mpc_clipped_sum(&parties, &cfg, Seed::Os).unwrap();
    let dt = t0.elapsed();
    let t1 = std::time::Instant::now();
    let f = fixed_clipped_sum(&parties, &cfg, &mut derive(1, "f")).unwrap();
    let df = t1.elapsed();
    assert_eq!(g.len(), shape.dim());
    assert_eq!(f.len(), shape.dim());
    eprintln!(
        "P = 2, K = 20, B = 100, d = (20, 4), D = {}: mpc {:.3} s, fixed {:.3} s; {} rounds; bytes sent per party {:?}; dealer values per party {:?}",
        shape.dim(),
        dt.as_secs_f64(),
        df.as_secs_f64(),
        report.rounds,
        report.bytes_sent,
        report.dealt_values
    );
}
