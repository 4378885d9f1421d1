/*!
`cape mean`: S in-process sites run the private-mean study (CAPE over the real SecureAgg,
`capelab_core::study::mean`) on a MemoryRoom, T times, with K of them vanishing at random phases;
the empirical variances are set against the theory.

Everything protocol-related comes from core ([`StudySim`]); this file parses and checks flags
(every error names its flag), draws the data and the dropout schedule from the seed, accumulates
the trials, and prints one JSON object (`--json`) or a summary.

Data: site s holds N_s rows of d values drawn from Beta(2 + s mod 3, 2 + s mod 4) (fixed for the
run). Dropouts: each trial picks K distinct sites and, for each, a point (before SecureAgg, after
any SecureAgg round of the first attempt, or after the noise sum) and a mode (disconnect or
silence) from its own generator, so the final U always has S − K sites; a dropout after the noise
sum costs a re-run. The reference of each trial is the pooled mean of its final U.
*/

use std::collections::BTreeMap;
use std::process::ExitCode;

use capelab_core::accountant::ledger::Bound;
use capelab_core::accountant::{Budget, Ledger};
use capelab_core::cape::SiteRelease;
use capelab_core::rng::{CapeRng, derive, os_rng};
use capelab_core::secagg::sim::{DropMode, DropPoint};
use capelab_core::secagg::{ConfigError, Phase};
use capelab_core::study::mean::sim::{ScriptedDropout, StudyDropPoint, StudySim, StudySimConfig};
use capelab_core::study::mean::{
    Calibration, StudyConfigError, StudyDropout, StudyParams, StudyPhase, Theory, row_mean,
};
use rand::RngExt;
use rand_distr::{Beta, Distribution};
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct MeanArgs {
    /// Number of sites S.
    #[arg(long, value_name = "S")]
    sites: usize,
    /// Sites that vanish in each trial, at random phases (at most S − t).
    #[arg(long, value_name = "K", default_value_t = 0)]
    dropouts: usize,
    /// ε the local noise is calibrated to.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    epsilon: f64,
    /// δ the local noise is calibrated to.
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    delta: f64,
    /// Number of trials (fresh noise, dropouts and keys each time; the data stay).
    #[arg(long, value_name = "T")]
    trials: usize,
    /// Run seed (data, noise, keys, dropouts). Omitted: drawn from OS entropy and printed.
    #[arg(long, value_name = "X")]
    seed: Option<u64>,
    /// Rows per site N_s.
    #[arg(long, value_name = "N", default_value_t = 100)]
    values_per_site: usize,
    /// Values per row d.
    #[arg(long, value_name = "d", default_value_t = 1)]
    dimension: usize,
    /// SecureAgg threshold t (default ⌊2S/3⌋ + 1).
    #[arg(long, value_name = "t")]
    threshold: Option<usize>,
    /// How τ is calibrated: the papers' classical formula, or the analytic Gaussian mechanism.
    #[arg(long, value_enum, default_value_t = CalibrationArg::Classical)]
    calibration: CalibrationArg,
    /// Each site's privacy budget ε (at δ) in its ledger, fresh for every trial.
    #[arg(long, value_name = "E", default_value_t = 1000.0, allow_negative_numbers = true)]
    site_budget: f64,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CalibrationArg {
    Classical,
    Analytic,
}

/// The checked experiment: everything is valid before the first trial runs.
struct MeanPlan {
    args: MeanArgs,
    seed: u64,
    seed_from_os: bool,
    params: StudyParams,
    budget: Budget,
    /// Each site's rows, and their mean.
    data: Vec<(Vec<Vec<f64>>, Vec<f64>)>,
}

/// The JSON `cape mean --json` prints.
#[derive(Serialize)]
struct MeanReport {
    seed: u64,
    /// "fixed" (from --seed) or "os" (drawn from OS entropy).
    seed_source: &'static str,
    sites: usize,
    dropouts: usize,
    threshold: usize,
    trials: usize,
    values_per_site: usize,
    dimension: usize,
    epsilon: f64,
    delta: f64,
    calibration: Calibration,
    classical_bound_covers: bool,
    calibration_note: Option<String>,
    sensitivity: f64,
    local_sd: f64,
    noise_multiplier: f64,
    /// The first trial's CAPE estimate, its conventional estimate, and the true (pooled) mean of
    /// its final U.
    estimate: Vec<f64>,
    estimate_conventional: Vec<f64>,
    pooled: Vec<f64>,
    /// The mean over all S sites (equal to `pooled` when nobody drops).
    pooled_all: Vec<f64>,
    /// The first trial's â_s: each with noise variance τ².
    messages: Vec<SiteRelease>,
    survivors: Vec<u32>,
    reruns: usize,
    reruns_total: usize,
    /// Empirical mean squared error against each trial's pooled mean, over trials × d.
    var_cape: f64,
    var_conv: f64,
    samples: usize,
    var_message_theory: f64,
    var_pool_theory: f64,
    var_conv_theory: f64,
    gain: f64,
    gain_theory: f64,
    /// max over trials and coordinates of |Σ_{s∈U} e_s| in the final attempt.
    zero_sum_residual: f64,
    colluders: usize,
    /// Privacy of one CAPE release (|U| = S − K): the full adversary view is the guarantee.
    mu_z: f64,
    c_s_full_view: f64,
    delta_cape: Option<f64>,
    delta_cape_phi_bound: Option<f64>,
    mu_z_theorem1: f64,
    c_s_theorem1: f64,
    delta_cape_theorem1: Option<f64>,
    c_s_paper_eq1: Option<f64>,
    delta_cape_paper_eq1: Option<f64>,
    delta_conv: Option<f64>,
    delta_pool: Option<f64>,
    dropouts_by_phase: BTreeMap<String, usize>,
    first_trial_dropouts: Vec<StudyDropout>,
    /// Each site's ledger total ε after the first trial (0 for a site that released nothing):
    /// the tighter of RDP and PLD, as the ledger charges.
    site_epsilon_spent: Vec<f64>,
    /// Which accountant gave each total: "pld" or "rdp" (null for a site that released nothing).
    site_epsilon_spent_accountant: Vec<Option<Bound>>,
    aborted_trials: usize,
}

pub fn run(args: MeanArgs) -> ExitCode {
    let plan = match MeanPlan::from_args(args) {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    if plan.seed_from_os {
        eprintln!(
            "note: no --seed given; drew seed {} from OS entropy (pass --seed {} to reproduce)",
            plan.seed, plan.seed
        );
    }
    let report = match simulate(&plan) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let text = if plan.args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: could not encode the report as JSON: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        human(&report)
    };
    // A closed pipe (`cape mean … | head`) is the reader's choice, not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    ExitCode::SUCCESS
}

impl MeanPlan {
    fn from_args(args: MeanArgs) -> Result<Self, String> {
        if args.trials == 0 {
            return Err("--trials: T = 0; run at least one trial".into());
        }
        let ids: Vec<u32> = (1..=args.sites as u32).collect();
        let calibration = match args.calibration {
            CalibrationArg::Classical => Calibration::Classical,
            CalibrationArg::Analytic => Calibration::Analytic,
        };
        let mut params = StudyParams::new(ids, args.epsilon, args.delta, args.values_per_site)
            .and_then(|p| p.with_dimension(args.dimension))
            .and_then(|p| p.with_calibration(calibration))
            .map_err(|e| flagged(&e))?
            .with_conventional(true);
        if let Some(t) = args.threshold {
            params = params.with_threshold(t).map_err(|e| flagged(&e))?;
        }
        let t = params.threshold;
        if args.dropouts > args.sites - t {
            return Err(format!(
                "--dropouts: K = {} would leave {} sites, fewer than the threshold t = {t}; at \
                 most S − t = {} may drop",
                args.dropouts,
                args.sites.saturating_sub(args.dropouts),
                args.sites - t
            ));
        }
        let budget =
            Budget::new(args.site_budget, args.delta).map_err(|e| format!("--site-budget: {e}"))?;
        let (seed, seed_from_os) = match args.seed {
            Some(seed) => (seed, false),
            None => (os_rng().random::<u64>(), true),
        };
        let data = (0..args.sites)
            .map(|s| {
                let rows = site_rows(seed, s, args.values_per_site, args.dimension);
                let mean = row_mean(&rows, args.dimension);
                (rows, mean)
            })
            .collect();
        Ok(MeanPlan { args, seed, seed_from_os, params, budget, data })
    }
}

/// The flag a study configuration error is about, with the error.
fn flagged(e: &StudyConfigError) -> String {
    let flag = match e {
        StudyConfigError::Epsilon(_) => "--epsilon",
        StudyConfigError::Delta(_) => "--delta",
        StudyConfigError::NoValues => "--values-per-site",
        StudyConfigError::Dimension { .. } => "--dimension",
        StudyConfigError::SecAgg(ConfigError::TooFewSites { .. }) => "--sites",
        StudyConfigError::SecAgg(
            ConfigError::ThresholdAboveSites { .. } | ConfigError::ThresholdAtMostHalf { .. },
        ) => "--threshold",
        StudyConfigError::Calibration(_) => "--epsilon/--delta",
        _ => "parameters",
    };
    format!("{flag}: {e}")
}

/// Site `s`'s rows: Beta(2 + s mod 3, 2 + s mod 4) values in (0, 1).
fn site_rows(seed: u64, s: usize, n: usize, d: usize) -> Vec<Vec<f64>> {
    let beta = Beta::new(2.0 + (s % 3) as f64, 2.0 + (s % 4) as f64).expect("positive shapes");
    let mut rng = derive(seed, &format!("cape mean/data/site {s}"));
    (0..n).map(|_| (0..d).map(|_| beta.sample(&mut rng)).collect()).collect()
}

/// Where a scheduled site may vanish: every point removes it from the final U (a point after the
/// noise sum through a re-run).
const DROP_POINTS: [StudyDropPoint; 9] = [
    StudyDropPoint::OnStart,
    StudyDropPoint::AfterAccept,
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::BeforeAdvertise },
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterAdvertise },
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterShareKeys },
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterMaskedInput },
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::DuringUnmask },
    StudyDropPoint::SecAgg { attempt: 1, at: DropPoint::AfterUnmask },
    StudyDropPoint::BeforeRelease { attempt: 1 },
];

/// K distinct sites, each with a drop point and a mode.
fn schedule(rng: &mut CapeRng, sites: usize, k: usize) -> Vec<ScriptedDropout> {
    let mut order: Vec<usize> = (0..sites).collect();
    for i in 0..k {
        let j = rng.random_range(i..sites);
        order.swap(i, j);
    }
    order[..k]
        .iter()
        .map(|&site| ScriptedDropout {
            site,
            at: DROP_POINTS[rng.random_range(0..DROP_POINTS.len())],
            mode: if rng.random::<bool>() { DropMode::Disconnect } else { DropMode::Silent },
        })
        .collect()
}

fn phase_name(phase: StudyPhase) -> &'static str {
    match phase {
        StudyPhase::Invitation => "invitation",
        StudyPhase::SecAgg { round: Phase::AdvertiseKeys } => "secagg_advertise_keys",
        StudyPhase::SecAgg { round: Phase::ShareKeys } => "secagg_share_keys",
        StudyPhase::SecAgg { round: Phase::MaskedInput } => "secagg_masked_input",
        StudyPhase::SecAgg { round: Phase::Unmask } => "secagg_unmask",
        StudyPhase::Release => "release",
    }
}

fn simulate(plan: &MeanPlan) -> Result<MeanReport, String> {
    let args = &plan.args;
    let (s, k, d) = (args.sites, args.dropouts, args.dimension);
    let noise = plan.params.noise().map_err(|e| flagged(&e))?;
    let final_sites = s - k;
    let theory = Theory::new(&noise, final_sites, args.epsilon)
        .ok_or_else(|| format!("--dropouts: {final_sites} remaining sites cannot form a round"))?;
    let pooled_all: Vec<f64> =
        (0..d).map(|j| plan.data.iter().map(|(_, m)| m[j]).sum::<f64>() / s as f64).collect();

    let progress = crate::progress::Progress::new("mean", "trial", args.trials as u64);
    let mut sq_cape = 0.0;
    let mut sq_conv = 0.0;
    let mut samples = 0usize;
    let mut residual = 0.0f64;
    let mut reruns_total = 0;
    let mut aborted = Vec::new();
    let mut by_phase: BTreeMap<String, usize> = BTreeMap::new();
    let mut first: Option<MeanReport> = None;

    for trial in 0..args.trials {
        let mut rng = derive(plan.seed, &format!("cape mean/trial {trial}"));
        let mut config =
            StudySimConfig::new(rng.random(), args.epsilon, args.delta, args.values_per_site)
                .with_dimension(d)
                .with_conventional(true);
        config.threshold = args.threshold;
        config.calibration = plan.params.calibration;
        config.dropouts = schedule(&mut rng, s, k);
        let sites: Vec<(Vec<Vec<f64>>, Ledger)> = plan
            .data
            .iter()
            .enumerate()
            .map(|(i, (rows, _))| {
                let ledger = Ledger::new(format!("site {i}"), plan.budget).expect("checked budget");
                (rows.clone(), ledger)
            })
            .collect();
        let mut sim = StudySim::new(config, sites).map_err(|e| flagged(&e))?;
        let report = sim.run();
        progress.inc(1);
        let Some(outcome) = report.outcome else {
            return Err(format!("trial {trial} stalled: a bug in the simulator"));
        };
        for drop in &outcome.dropouts {
            *by_phase.entry(phase_name(drop.phase).to_owned()).or_default() += 1;
        }
        reruns_total += outcome.reruns();
        let Some(est) = outcome.estimates() else {
            aborted.push(format!("trial {trial}: {}", outcome.abort_reason().expect("aborted")));
            continue;
        };
        let index: Vec<usize> = est
            .survivors
            .iter()
            .map(|id| (0..s).find(|&i| sim.site_id(i) == *id).expect("a site of the room"))
            .collect();
        let pooled: Vec<f64> = (0..d)
            .map(|j| index.iter().map(|&i| plan.data[i].1[j]).sum::<f64>() / index.len() as f64)
            .collect();
        let conventional =
            est.conventional.clone().ok_or("the conventional estimate is missing")?;
        for j in 0..d {
            sq_cape += (est.cape[j] - pooled[j]).powi(2);
            sq_conv += (conventional[j] - pooled[j]).powi(2);
            let sum: f64 = index
                .iter()
                .map(|&i| {
                    let last = report.sites[i].attempts.last().expect("in U");
                    last.zero_sum_noise.as_ref().expect("in U")[j]
                })
                .sum();
            residual = residual.max(sum.abs());
        }
        samples += d;
        if first.is_none() {
            let privacy = &theory.privacy;
            first = Some(MeanReport {
                seed: plan.seed,
                seed_source: if plan.seed_from_os { "os" } else { "fixed" },
                sites: s,
                dropouts: k,
                threshold: plan.params.threshold,
                trials: args.trials,
                values_per_site: args.values_per_site,
                dimension: d,
                epsilon: args.epsilon,
                delta: args.delta,
                calibration: noise.calibration,
                classical_bound_covers: noise.classical_bound_covers,
                calibration_note: noise.calibration_note(args.epsilon),
                sensitivity: noise.sensitivity,
                local_sd: noise.local_sd,
                noise_multiplier: noise.noise_multiplier,
                estimate: est.cape.clone(),
                estimate_conventional: conventional.clone(),
                pooled,
                pooled_all: pooled_all.clone(),
                messages: est.messages.clone(),
                survivors: est.survivors.clone(),
                reruns: outcome.reruns(),
                reruns_total: 0,
                var_cape: 0.0,
                var_conv: 0.0,
                samples: 0,
                var_message_theory: theory.var_message,
                var_pool_theory: theory.var_pooled,
                var_conv_theory: theory.var_conventional,
                gain: 0.0,
                gain_theory: theory.gain,
                zero_sum_residual: 0.0,
                colluders: theory.colluders,
                mu_z: privacy.full_view.mu_z,
                c_s_full_view: privacy.full_view.c_s,
                delta_cape: privacy.full_view.delta_tail,
                delta_cape_phi_bound: privacy.full_view.delta_phi_bound,
                mu_z_theorem1: privacy.theorem1.mu_z,
                c_s_theorem1: privacy.theorem1.c_s,
                delta_cape_theorem1: privacy.theorem1.delta_tail,
                c_s_paper_eq1: privacy.paper_eq1.map(|p| p.c_s),
                delta_cape_paper_eq1: privacy.paper_eq1.and_then(|p| p.delta_phi_bound),
                delta_conv: privacy.delta_conv,
                delta_pool: privacy.delta_pool,
                dropouts_by_phase: BTreeMap::new(),
                first_trial_dropouts: outcome.dropouts.clone(),
                site_epsilon_spent: report
                    .sites
                    .iter()
                    .map(|site| site.spent.last().map_or(0.0, |e| e.epsilon_after))
                    .collect(),
                site_epsilon_spent_accountant: report
                    .sites
                    .iter()
                    .map(|site| site.spent.last().map(|e| e.bound))
                    .collect(),
                aborted_trials: 0,
            });
        }
    }
    progress.finish();
    let Some(mut report) = first else {
        return Err(format!(
            "every trial ended without an estimate; the first: {}",
            aborted.first().map_or("?", String::as_str)
        ));
    };
    report.var_cape = sq_cape / samples as f64;
    report.var_conv = sq_conv / samples as f64;
    report.samples = samples;
    report.gain = report.var_conv / report.var_cape;
    report.zero_sum_residual = residual;
    report.reruns_total = reruns_total;
    report.dropouts_by_phase = by_phase;
    report.aborted_trials = aborted.len();
    for a in aborted.iter().take(3) {
        eprintln!("warning: {a}");
    }
    Ok(report)
}

fn vector(v: &[f64]) -> String {
    let shown: Vec<String> = v.iter().take(6).map(|x| format!("{x:.6}")).collect();
    let more = if v.len() > 6 { format!(", … ({} values)", v.len()) } else { String::new() };
    format!("[{}{more}]", shown.join(", "))
}

fn opt(v: Option<f64>) -> String {
    v.map_or("— (ε ≤ μ_z)".into(), |x| format!("{x:.4e}"))
}

fn human(r: &MeanReport) -> String {
    let mut out = format!(
        "cape mean: S = {} sites (K = {} dropped per trial, t = {}), N_s = {} rows of d = {} \
         values, ε = {}, δ = {:e}, {} trials, seed {} ({})\n",
        r.sites,
        r.dropouts,
        r.threshold,
        r.values_per_site,
        r.dimension,
        r.epsilon,
        r.delta,
        r.trials,
        r.seed,
        r.seed_source
    );
    out += &format!(
        "noise: Δ = √d/N_s = {:.6}, τ = {:.6}, z = τ/Δ = {:.4} ({:?} calibration)\n",
        r.sensitivity, r.local_sd, r.noise_multiplier, r.calibration
    );
    if let Some(note) = &r.calibration_note {
        out += &format!("note: {note}\n");
    }
    out += &format!("\nfirst trial, U = {:?} ({} re-runs)\n", r.survivors, r.reruns);
    out += &format!("  CAPE estimate          {}\n", vector(&r.estimate));
    out += &format!("  conventional estimate  {}\n", vector(&r.estimate_conventional));
    out += &format!("  pooled (true) mean     {}\n", vector(&r.pooled));
    for m in r.messages.iter().take(8) {
        out += &format!("  â from site {:<9} {}\n", m.site, vector(&m.values));
    }
    out += &format!(
        "\nover {} trials × {} coordinates = {} samples\n",
        r.trials, r.dimension, r.samples
    );
    out += &format!(
        "  var CAPE          {:.4e}   theory τ²/|U|² = {:.4e} (pooled)\n",
        r.var_cape, r.var_pool_theory
    );
    out += &format!(
        "  var conventional  {:.4e}   theory τ²/|U| = {:.4e}\n",
        r.var_conv, r.var_conv_theory
    );
    out += &format!("  gain              {:.3}        theory |U| = {}\n", r.gain, r.gain_theory);
    out += &format!("  max |Σ e_s|       {:e}\n", r.zero_sum_residual);
    out += &format!(
        "  re-runs           {} in all; dropouts by phase {:?}\n",
        r.reruns_total, r.dropouts_by_phase
    );
    out += &format!(
        "\nprivacy of one CAPE release at ε = {} with |U| = {}, S_C = {}\n",
        r.epsilon, r.gain_theory, r.colluders
    );
    out += &format!(
        "  full adversary view (the guarantee)  c_S = {:.4}  μ_z = {:.4e}  δ = {}\n",
        r.c_s_full_view,
        r.mu_z,
        opt(r.delta_cape)
    );
    out += &format!(
        "  Theorem 1's view (erratum applied)   c_S = {:.4}  μ_z = {:.4e}  δ = {}\n",
        r.c_s_theorem1,
        r.mu_z_theorem1,
        opt(r.delta_cape_theorem1)
    );
    if let Some(c) = r.c_s_paper_eq1 {
        out += &format!(
            "  eq. (1) as printed (φ bound)         c_S = {c:.4}  δ = {}\n",
            opt(r.delta_cape_paper_eq1)
        );
    }
    out += &format!("  δ_conv = {}   δ_pool = {}", opt(r.delta_conv), opt(r.delta_pool));
    out += if r.classical_bound_covers {
        "\n"
    } else {
        "   (classical bound: not valid at ε ≥ 1)\n"
    };
    if r.aborted_trials > 0 {
        out += &format!("\n{} trials ended without an estimate\n", r.aborted_trials);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_pick_distinct_sites() {
        let mut rng = derive(1, "x");
        for _ in 0..50 {
            let s = schedule(&mut rng, 7, 3);
            let mut sites: Vec<usize> = s.iter().map(|d| d.site).collect();
            sites.sort_unstable();
            sites.dedup();
            assert_eq!(sites.len(), 3);
            assert!(sites.iter().all(|&i| i < 7));
        }
        let rows = site_rows(3, 2, 40, 2);
        assert!(rows.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
    }

    #[test]
    fn threshold_errors_name_the_flag() {
        let e =
            StudyConfigError::SecAgg(ConfigError::ThresholdAtMostHalf { threshold: 2, sites: 4 });
        assert!(flagged(&e).starts_with("--threshold: "));
    }
}
