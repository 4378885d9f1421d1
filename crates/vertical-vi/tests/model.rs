//! The mixture model and DP-VI in plain mode (spec B2–B4, B6): gradients against finite
//! differences, the renormalisation, training on the generated Adult-like table, the twin.

use capelab_core::rng::{Seed, derive};
use capelab_vertical_vi::batch::{clipped_sum_plain, norm_bound_without_betas};
use capelab_vertical_vi::model::generate::{Generated, adult_like};
use capelab_vertical_vi::model::gradient::{elbo_gradient, zeta_gradient};
use capelab_vertical_vi::model::local::{
    DEN_TARGET, PartyDensity, all_parties_local, party_local_with_target, shift_target,
};
use capelab_vertical_vi::model::nll::{log_likelihoods, mean_nll};
use capelab_vertical_vi::model::params::Segment;
use capelab_vertical_vi::model::train::merge_parties;
use capelab_vertical_vi::model::tv::party_tv;
use capelab_vertical_vi::model::twin::decode;
use capelab_vertical_vi::model::{Model, Posterior, Sampling, TrainConfig, train_plain};
use capelab_vertical_vi::schema::{Cell, FeatureKind, PartyBlock, UNIT_CLAMP};
use rand_distr::{Distribution, StandardNormal};

fn rows(blocks: &[PartyBlock], idx: &[usize]) -> Vec<PartyBlock> {
    blocks
        .iter()
        .map(|b| PartyBlock {
            rows: idx.len(),
            features: b.features,
            cells: idx.iter().flat_map(|&n| b.row(n).to_vec()).collect(),
        })
        .collect()
}

fn normal(rng: &mut capelab_core::rng::CapeRng) -> f64 {
    StandardNormal.sample(rng)
}

fn random_zeta(model: &Model, seed: u64, scale: f64) -> Vec<f64> {
    let mut rng = derive(seed, "test/zeta");
    (0..model.zeta_len()).map(|_| scale * normal(&mut rng)).collect()
}

fn rel_close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// Spec D1 in ζ: GY_nk = r_nk − π_k = ∂/∂y_k log Σ_k π_k F_nk and GR = r_nk ∇_ζ log F_p equal
/// central differences of log p(x_n|T(ζ)) in ζ.
#[test]
fn per_example_zeta_gradients_match_finite_differences() {
    let g = adult_like(40, 1);
    let model = Model::new(g.schema.clone(), 4);
    let zeta = random_zeta(&model, 2, 0.8);
    let theta = model.transform(&zeta);
    let k = model.components;
    let ll = |z: &[f64], one: &[PartyBlock]| log_likelihoods(&model, &model.transform(z), one)[0];
    for n in [0, 7, 23] {
        let one = rows(&g.blocks, &[n]);
        let locals = all_parties_local(&model, &theta, &one, &[0]);
        let grad = clipped_sum_plain(&theta[..k], &locals, 1e12);
        assert_eq!(grad.len(), model.zeta_len());
        for i in 0..model.zeta_len() {
            let h = 1e-6;
            let mut up = zeta.clone();
            up[i] += h;
            let mut down = zeta.clone();
            down[i] -= h;
            let fd = (ll(&up, &one) - ll(&down, &one)) / (2.0 * h);
            assert!(rel_close(grad[i], fd, 1e-6), "n {n} ζ[{i}]: {} vs fd {fd}", grad[i]);
        }
    }
}

/// The θ-space per-example gradient of the paper, [GP (K), GR^p (K × d_p)] with
/// GP_nk = mat_nk/den_n and GR = π_k·GP_nk·∇_θ log F_p, summed without clipping.
fn theta_space_sum(
    model: &Model,
    theta: &[f64],
    blocks: &[PartyBlock],
    batch: &[usize],
) -> Vec<f64> {
    let k = model.components;
    let locals = all_parties_local(model, theta, blocks, batch);
    let dens: Vec<PartyDensity> =
        (0..blocks.len()).map(|p| PartyDensity::new(model, p, theta)).collect();
    let mut sum = vec![0.0; model.theta_len()];
    for (i, &n) in batch.iter().enumerate() {
        let mat: Vec<f64> =
            (0..k).map(|c| locals.iter().map(|l| l.mat[i * k + c]).product()).collect();
        let den: f64 = (0..k).map(|c| theta[c] * mat[c]).sum();
        for c in 0..k {
            sum[c] += mat[c] / den;
        }
        for (p, d) in dens.iter().enumerate() {
            let w = model.party_width(p);
            let mut dlog = vec![0.0; k * w];
            d.grad_log_density_theta(blocks[p].row(n), &mut dlog);
            let at = model.party_theta_offset(p);
            for c in 0..k {
                for j in 0..w {
                    sum[at + c * w + j] += theta[c] * mat[c] / den * dlog[c * w + j];
                }
            }
        }
    }
    sum
}

/// Moving the per-example gradients from θ to ζ does not change the unclipped ELBO gradient (the
/// same g_ζ as pulling the θ-space sum back through T, to 1e-9), but bounds what the clip sees:
/// per example ‖GY‖² ≤ 2 and each Categorical's part (all K components) has squared norm ≤ 2,
/// so the whole non-Beta part is within [`norm_bound_without_betas`]; the θ-space GP and
/// 1[x=c]/ω_c blocks are unbounded.
#[test]
fn zeta_space_sum_equals_the_pulled_back_theta_sum_and_bounds_categoricals() {
    let g = adult_like(300, 51);
    let model = Model::new(g.schema.clone(), 5);
    let k = model.components;
    let (mut theta_cat_max, mut theta_gp_max, mut zeta_max) = (0.0f64, 0.0f64, 0.0f64);
    // π (K = 5): 2; education (8 labels): 2; sex, income (2 labels): 1 each
    let bound = norm_bound_without_betas(&g.schema, k);
    assert_eq!(bound, 6f64.sqrt());
    for trial in 0..6 {
        // wide ζ: some tiny π_k and ω_c
        let zeta = random_zeta(&model, 60 + trial, 1.0 + trial as f64);
        let theta = model.transform(&zeta);
        let all: Vec<usize> = (0..300).collect();
        let locals = all_parties_local(&model, &theta, &g.blocks, &all);
        let new = zeta_gradient(
            &model,
            &theta,
            &clipped_sum_plain(&theta[..k], &locals, f64::INFINITY),
            1.0,
        );
        let mut gt = model.grad_log_prior_theta();
        for (a, b) in gt.iter_mut().zip(theta_space_sum(&model, &theta, &g.blocks, &all)) {
            *a += b;
        }
        let mut old = model.pullback(&theta, &gt);
        for (a, b) in old.iter_mut().zip(model.grad_log_det_jacobian(&theta)) {
            *a += b;
        }
        for (i, (a, b)) in new.iter().zip(&old).enumerate() {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "trial {trial} ζ[{i}]: {a} vs {b}");
        }

        // per-example blocks
        for &n in &all {
            let one = rows(&g.blocks, &[n]);
            let l1 = all_parties_local(&model, &theta, &one, &[0]);
            let gz = clipped_sum_plain(&theta[..k], &l1, f64::INFINITY);
            let gy: f64 = gz[..k - 1].iter().map(|v| v * v).sum();
            assert!(gy <= 2.0 + 1e-12, "‖GY‖² = {gy}");
            zeta_max = zeta_max.max(gy);
            let mut outside_betas = gy;
            let gt = theta_space_sum(&model, &theta, &one, &[0]);
            theta_gp_max = theta_gp_max.max(gt[..k].iter().map(|v| v * v).sum::<f64>());
            for (p, party) in model.schema.parties.iter().enumerate() {
                let (e, w) = (model.party_zeta_width(p), model.party_width(p));
                let (mut ze, mut th) = (model.party_zeta_offset(p), model.party_theta_offset(p));
                for f in &party.features {
                    let (fe, fw) = match &f.kind {
                        FeatureKind::Beta { .. } => (2, 2),
                        FeatureKind::Categorical { labels } => (labels.len() - 1, labels.len()),
                    };
                    if matches!(f.kind, FeatureKind::Categorical { .. }) {
                        let sq = |v: &[f64], at: usize, stride: usize, len: usize| -> f64 {
                            (0..k)
                                .flat_map(|c| &v[at + c * stride..at + c * stride + len])
                                .map(|x| x * x)
                                .sum()
                        };
                        let z2 = sq(&gz, ze, e, fe);
                        assert!(z2 <= 2.0 + 1e-12, "{}: squared norm {z2}", f.name);
                        zeta_max = zeta_max.max(z2);
                        outside_betas += z2;
                        theta_cat_max = theta_cat_max.max(sq(&gt, th, w, fw));
                    }
                    ze += fe;
                    th += fw;
                }
            }
            assert!(outside_betas.sqrt() <= bound + 1e-12, "{} > {bound}", outside_betas.sqrt());
        }
    }
    println!(
        "largest per-example squared norms: ζ-space GY or Categorical block {zeta_max:.3}, θ-space \
         GP {theta_gp_max:.3e}, θ-space Categorical block {theta_cat_max:.3e}"
    );
    assert!(theta_cat_max > 100.0 && theta_gp_max > 100.0, "the θ-space blocks were large");
}

/// log p(D, T(ζ)) + log|det J_T(ζ)|.
fn log_joint(model: &Model, zeta: &[f64], blocks: &[PartyBlock]) -> f64 {
    let theta = model.transform(zeta);
    log_likelihoods(model, &theta, blocks).iter().sum::<f64>()
        + model.log_prior(&theta)
        + model.log_det_jacobian(zeta)
}

/// The aggregator's ζ-gradient (batch = all data so N/B = 1, no noise, no clip) equals finite
/// differences of log p(D, T(ζ)) + log|J|; and ∇_{log σ} of the one-draw ELBO estimate equals
/// finite differences in log σ at fixed η.
#[test]
fn zeta_and_elbo_gradients_match_finite_differences() {
    let g = adult_like(60, 3);
    let model = Model::new(g.schema.clone(), 3);
    let k = model.components;
    let mu = random_zeta(&model, 4, 0.7);
    let log_sigma: Vec<f64> = random_zeta(&model, 5, 0.3).iter().map(|v| v - 2.0).collect();
    let eta = random_zeta(&model, 6, 1.0);
    let zeta: Vec<f64> = (0..mu.len()).map(|i| mu[i] + log_sigma[i].exp() * eta[i]).collect();
    let theta = model.transform(&zeta);
    let all: Vec<usize> = (0..60).collect();
    let locals = all_parties_local(&model, &theta, &g.blocks, &all);
    let sum = clipped_sum_plain(&theta[..k], &locals, f64::INFINITY);
    let gz = zeta_gradient(&model, &theta, &sum, 1.0);
    for i in 0..model.zeta_len() {
        let h = 1e-5;
        let mut up = zeta.clone();
        up[i] += h;
        let mut down = zeta.clone();
        down[i] -= h;
        let fd =
            (log_joint(&model, &up, &g.blocks) - log_joint(&model, &down, &g.blocks)) / (2.0 * h);
        assert!(rel_close(gz[i], fd, 1e-6), "ζ[{i}]: {} vs fd {fd}", gz[i]);
    }
    // ELBO estimate at fixed η: log_joint(μ + e^{ω}η) + Σ ω
    let (g_mu, g_ls) = elbo_gradient(&gz, &eta, &log_sigma);
    assert_eq!(g_mu, gz);
    for i in (0..model.zeta_len()).step_by(3) {
        let elbo = |ls: f64| {
            let mut z = zeta.clone();
            z[i] = mu[i] + ls.exp() * eta[i];
            log_joint(&model, &z, &g.blocks) + ls
        };
        let h = 1e-5;
        let fd = (elbo(log_sigma[i] + h) - elbo(log_sigma[i] - h)) / (2.0 * h);
        assert!(rel_close(g_ls[i], fd, 1e-6), "log σ[{i}]: {} vs fd {fd}", g_ls[i]);
    }
}

/// T and its Jacobian: the Jacobian term matches a finite-difference log|det| of T restricted to
/// free coordinates (checked on the π simplex alone), and T⁻¹ ∘ T = id.
#[test]
fn transform_roundtrip_and_simplex_jacobian() {
    let g = adult_like(1, 1);
    let model = Model::new(g.schema.clone(), 5);
    let zeta = random_zeta(&model, 9, 1.5);
    let theta = model.transform(&zeta);
    let back = model.inverse_transform(&theta);
    for (a, b) in zeta.iter().zip(&back) {
        assert!((a - b).abs() < 1e-12);
    }
    for s in model.segments() {
        if let Segment::Simplex { theta: t, len, .. } = *s {
            let sum: f64 = theta[t..t + len].iter().sum();
            assert!((sum - 1.0).abs() < 1e-14);
        }
    }
    // π block: numerical Jacobian of (π_1..π_{K−1}) w.r.t. y (K−1 = 4), its log det
    let kk = model.components - 1;
    let mut jac = vec![vec![0.0; kk]; kk];
    for j in 0..kk {
        let h = 1e-6;
        let mut up = zeta.clone();
        up[j] += h;
        let mut down = zeta.clone();
        down[j] -= h;
        let (tu, td) = (model.transform(&up), model.transform(&down));
        for i in 0..kk {
            jac[i][j] = (tu[i] - td[i]) / (2.0 * h);
        }
    }
    // determinant by Gaussian elimination
    let mut det = 1.0;
    for c in 0..kk {
        let p = (c..kk).max_by(|&a, &b| jac[a][c].abs().total_cmp(&jac[b][c].abs())).unwrap();
        jac.swap(c, p);
        if p != c {
            det = -det;
        }
        det *= jac[c][c];
        for r in c + 1..kk {
            let f = jac[r][c] / jac[c][c];
            let pivot = jac[c].clone();
            for (v, p) in jac[r][c..].iter_mut().zip(&pivot[c..]) {
                *v -= f * p;
            }
        }
    }
    let expected: f64 = theta[..model.components].iter().map(|v| v.ln()).sum();
    assert!((det.abs().ln() - expected).abs() < 1e-6, "{} vs {expected}", det.abs().ln());
}

fn den(pi: &[f64], locals: &[capelab_vertical_vi::batch::PartyLocal], n: usize) -> f64 {
    let k = pi.len();
    (0..k).map(|c| pi[c] * locals.iter().map(|l| l.mat[n * k + c]).product::<f64>()).sum()
}

/// The shift cancels in GP and GR, and den stays in the Newton–Raphson range for extreme inputs.
#[test]
fn renormalisation_cancels_and_keeps_den_in_range() {
    let g = adult_like(30, 5);
    let model = Model::new(g.schema.clone(), 4);
    let k = model.components;
    let theta = model.transform(&random_zeta(&model, 7, 1.0));
    let batch: Vec<usize> = (0..30).collect();
    let sums: Vec<Vec<f64>> = [-30.0, 0.0, shift_target(2), 6.0]
        .iter()
        .map(|&t| {
            let locals: Vec<_> = (0..2)
                .map(|p| party_local_with_target(&model, p, &theta, &g.blocks[p], &batch, t))
                .collect();
            clipped_sum_plain(&theta[..k], &locals, 1e12)
        })
        .collect();
    for s in &sums[1..] {
        for (a, b) in s.iter().zip(&sums[0]) {
            assert!(rel_close(*a, *b, 1e-12), "{a} vs {b}");
        }
    }

    // extreme inputs: x at the clamp bounds, a, b ∈ {1e-4, 1e4} (ζ = ±9.2), peaked categoricals
    let mut rng = derive(8, "test/extreme");
    let mut cases = 0;
    let (mut agree, mut disagree_low) = (0, 0);
    for trial in 0..200 {
        let mut zeta = random_zeta(&model, 100 + trial, 6.0);
        for s in model.segments() {
            if let Segment::Positive { zeta: z, .. } = *s {
                zeta[z] = if normal(&mut rng) > 0.0 { 9.21 } else { -9.21 };
            }
        }
        let theta = model.transform(&zeta);
        let edge: Vec<PartyBlock> = g
            .blocks
            .iter()
            .map(|b| PartyBlock {
                rows: b.rows,
                features: b.features,
                cells: b
                    .cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match c {
                        Cell::Unit(_) => Cell::Unit(if (i + trial as usize).is_multiple_of(2) {
                            UNIT_CLAMP
                        } else {
                            1.0 - UNIT_CLAMP
                        }),
                        other => *other,
                    })
                    .collect(),
            })
            .collect();
        let locals = all_parties_local(&model, &theta, &edge, &batch);
        let sum = clipped_sum_plain(&theta[..k], &locals, 1.0);
        assert!(sum.iter().all(|v| v.is_finite()));
        for n in 0..batch.len() {
            cases += 1;
            let d = den(&theta[..k], &locals, n);
            assert!(d <= DEN_TARGET * (1.0 + 1e-9), "den {d}");
            // the parties' best components
            let best = |l: &capelab_vertical_vi::batch::PartyLocal| {
                (0..k).max_by(|&a, &b| l.mat[n * k + a].total_cmp(&l.mat[n * k + b])).unwrap()
            };
            let (b0, b1) = (best(&locals[0]), best(&locals[1]));
            if b0 == b1 {
                agree += 1;
                assert!(d >= DEN_TARGET * theta[b0] * (1.0 - 1e-9), "den {d}");
            } else if d < 0.0018 {
                disagree_low += 1;
            }
        }
        // one party holding all columns: den ≥ 256·π_k̂ always
        let (ms, mb) = merge_parties(&model.schema, &edge);
        let merged = Model::new(ms, k);
        let ml = all_parties_local(
            &merged,
            &merged.transform(&merged.inverse_transform(&theta_merge(&model, &merged, &theta))),
            &mb,
            &batch,
        );
        for n in 0..batch.len() {
            let d = den(&theta[..k], &ml, n);
            let kh = (0..k)
                .max_by(|&a, &b| ml[0].mat[n * k + a].total_cmp(&ml[0].mat[n * k + b]))
                .unwrap();
            assert!(
                d <= DEN_TARGET * (1.0 + 1e-9) && d >= DEN_TARGET * theta[kh] * (1.0 - 1e-9),
                "den {d}, π_k̂ {}",
                theta[kh]
            );
        }
    }
    println!(
        "extreme inputs: {cases} examples, parties agree on the best component in {agree}, den < 0.0018 in {disagree_low} of the others"
    );
    // with π uniform-ish the agreeing examples are always in range
}

/// θ of the partitioned model rearranged into the merged (one-party) model's layout.
fn theta_merge(split: &Model, merged: &Model, theta: &[f64]) -> Vec<f64> {
    let k = split.components;
    let mut out = theta[..k].to_vec();
    for c in 0..k {
        for p in 0..split.schema.parties.len() {
            let w = split.party_width(p);
            let at = split.party_theta_offset(p) + c * w;
            out.extend_from_slice(&theta[at..at + w]);
        }
    }
    assert_eq!(out.len(), merged.theta_len());
    out
}

fn split(g: &Generated, train: usize) -> (Vec<PartyBlock>, Vec<PartyBlock>) {
    let n = g.blocks[0].rows;
    (
        rows(&g.blocks, &(0..train).collect::<Vec<_>>()),
        rows(&g.blocks, &(train..n).collect::<Vec<_>>()),
    )
}

fn config(k: usize, steps: usize, sigma: f64, clip: f64, seed: u64) -> TrainConfig {
    TrainConfig {
        components: k,
        steps,
        sampling: Sampling::Poisson { rate: 0.02 },
        clip,
        noise_multiplier: sigma,
        learning_rate: 0.03,
        init_scale: 0.5,
        init_log_sigma: -3.0,
        seed: Seed::Fixed(seed),
    }
}

fn initial_nll(g: &Generated, cfg: &TrainConfig, test: &[PartyBlock]) -> f64 {
    let model = Model::new(g.schema.clone(), cfg.components);
    let q = capelab_vertical_vi::model::train::initial_q(&model, cfg);
    Posterior { model, q }.test_nll(test)
}

/// Noise-free training on 5000 generated rows, K = 3, 4, 5: the test NLL drops far below the
/// initial one and ends within 0.05 nats of the truth's; the twin's per-column TV is ≤ 0.1; at the
/// trained θ, den stays in the Newton–Raphson range for almost every training row.
#[test]
fn training_without_noise_approaches_the_truth_and_the_twin_matches() {
    let g = adult_like(10_000, 11);
    let (train, test) = split(&g, 5_000);
    let truth_nll = mean_nll(&g.truth, &g.truth_theta, &test);
    for k in [3, 4, 5] {
        let cfg = config(k, 3000, 0.0, 1e6, 12);
        let init = initial_nll(&g, &cfg, &test);
        let mut seen = Vec::new();
        let post = train_plain(&g.schema, &train, &cfg, &mut |s| {
            if s.step % 500 == 0 {
                seen.push(s.step);
            }
        });
        assert_eq!(seen, [500, 1000, 1500, 2000, 2500, 3000]);
        let nll = post.test_nll(&test);
        println!(
            "no noise, K = {k}: initial NLL {init:.4}, trained {nll:.4}, truth {truth_nll:.4}"
        );
        assert!(init - nll > 1.0, "improvement {}", init - nll);
        assert!(nll - truth_nll < 0.05, "gap to truth {}", nll - truth_nll);

        let theta = post.median_theta();
        let all: Vec<usize> = (0..train[0].rows).collect();
        let locals = all_parties_local(&post.model, &theta, &train, &all);
        let out = (0..all.len())
            .filter(|&n| !(0.0018..=631.0).contains(&den(&theta[..k], &locals, n)))
            .count();
        println!("  den outside [0.0018, 631] at the trained θ: {out} of {} rows", all.len());
        assert!(out * 100 <= all.len(), "{out} rows out of the NR range");

        let mut rng = derive(13, "test/twin");
        let twin = post.sample_twin(20_000, &mut rng);
        let mut worst: f64 = 0.0;
        for (p, party) in g.schema.parties.iter().enumerate() {
            let tv = party_tv(party, &twin[p], &train[p]);
            println!("  twin TV {}: {tv:.4?}", party.name);
            worst = tv.iter().fold(worst, |m, &v| m.max(v));
        }
        assert!(worst <= 0.1, "worst TV {worst}");
        if k == 4 {
            let text = decode(&g.schema, &twin);
            assert_eq!(text[0].header, ["age", "education", "sex"]);
            assert_eq!(text[1].rows.len(), 20_000);
            let age: f64 = text[0].rows[0][0].parse().unwrap();
            assert!((17.0..=90.0).contains(&age));
            assert!(text[1].to_csv().starts_with("hours-per-week,income\n"));
        }
    }
}

/// Fixed-size batches (the paper's runs; N/B scaling) train as well.
#[test]
fn training_with_fixed_batches() {
    let g = adult_like(10_000, 41);
    let (train, test) = split(&g, 5_000);
    let truth_nll = mean_nll(&g.truth, &g.truth_theta, &test);
    let mut cfg = config(3, 3000, 0.0, 1e6, 42);
    cfg.sampling = Sampling::Fixed { size: 100 };
    let post = train_plain(&g.schema, &train, &cfg, &mut |s| assert_eq!(s.batch_size, 100));
    let nll = post.test_nll(&test);
    println!("fixed B = 100, K = 3: trained {nll:.4}, truth {truth_nll:.4}");
    assert!(nll - truth_nll < 0.05);
}

#[test]
fn training_with_noise_still_improves() {
    let g = adult_like(10_000, 21);
    let (train, test) = split(&g, 5_000);
    let truth_nll = mean_nll(&g.truth, &g.truth_theta, &test);
    let cfg = config(4, 2000, 2.0, 1.0, 22);
    let init = initial_nll(&g, &cfg, &test);
    let post = train_plain(&g.schema, &train, &cfg, &mut |_| {});
    let nll = post.test_nll(&test);
    println!(
        "σ = 2, C = 1, q = 0.02, K = 4: initial NLL {init:.4}, trained {nll:.4}, truth {truth_nll:.4}"
    );
    assert!(init - nll > 0.5, "improvement {}", init - nll);
}

#[test]
fn partitioned_and_merged_agree_and_seeded_runs_reproduce() {
    let g = adult_like(2_000, 31);
    let (train, test) = split(&g, 1_000);
    let cfg = config(3, 500, 0.0, 1e6, 32);
    let a = train_plain(&g.schema, &train, &cfg, &mut |_| {});
    let b = train_plain(&g.schema, &train, &cfg, &mut |_| {});
    assert_eq!(a, b, "seeded runs reproduce exactly");
    let (ms, mtrain) = merge_parties(&g.schema, &train);
    let (_, mtest) = merge_parties(&g.schema, &test);
    let m = train_plain(&ms, &mtrain, &cfg, &mut |_| {});
    let (na, nm) = (a.test_nll(&test), m.test_nll(&mtest));
    println!("partitioned NLL {na:.12}, merged {nm:.12}, difference {:.3e}", (na - nm).abs());
    assert!((na - nm).abs() < 1e-9);
}
