/*!
`cape account`: every accounting of one homogeneous run, printed as a table or as one JSON object.

`--accountant rdp` gives the RDP-family table (below), `pld` the privacy-loss-distribution
accountant (`capelab_core::accountant::pld`, dp-accounting's `PLDAccountant`), `all` (default)
both, each with the time it took. JSON: the RDP keys below at the top level (when computed), `pld`
(`epsilon`, `interval`: the grid step or null when the composition was exact, per view), and
`time_ms` (`rdp`, `pld`).

The numbers come from `capelab_core::accountant::comparison`; this file only parses flags, maps
errors to the flag at fault, and formats. JSON keys (aggregator's view at the top level):
`epsilon_rdp`/`alpha_rdp` (standard conversion, exact optimum for unsampled runs),
`epsilon_rdp_grid`, `epsilon_rdp_improved`/`alpha_rdp_improved` (Balle et al. 2020),
`epsilon_rdp_improved_grid`, `epsilon_closed_form`, `epsilon_exact`, `epsilon_moments`/`moments_order`,
`epsilon_moments_as_printed`, `epsilon_basic`, `epsilon_strong` (with `basic`/`strong` per-release
pairs), and `collusion_aware` (the same keys under c_S) when `--collusion-factor` is given.
*/

use std::process::ExitCode;
use std::time::Instant;

use capelab_core::accountant::pld::{
    self, Calibration, calibrate_noise_multiplier, calibrate_noise_multiplier_rdp,
};
use capelab_core::accountant::{
    AccountantError, ComparisonReport, ComparisonRequest, PldError, PldReport, ViewReport,
};
use serde::Serialize;

/// Which accountants to run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accountant {
    /// RDP (both conversions), the exact Gaussian curve, moments, basic and strong composition.
    Rdp,
    /// Privacy loss distributions (the tightest upper bound).
    Pld,
    /// Both, side by side.
    All,
}

#[derive(clap::Args, Debug)]
pub struct AccountArgs {
    /// Noise multiplier z = σ/Δ of every release.
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    noise_multiplier: f64,
    /// Number of releases J (count every release: an iteration releasing W and b is 2).
    #[arg(long, value_name = "J")]
    compositions: u64,
    /// Target δ of the composed guarantee.
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    delta: f64,
    /// Poisson sampling rate q of each release (DP-SGD); omit for unsampled releases.
    #[arg(long, value_name = "Q", allow_negative_numbers = true)]
    sampling_rate: Option<f64>,
    /// CAPE's collusion factor c_S (≥ 1) for the colluding adversary's view; both views are
    /// reported.
    #[arg(long, value_name = "C", allow_negative_numbers = true)]
    collusion_factor: Option<f64>,
    /// RDP orders of the grid: comma-separated numbers and integer ranges, e.g. "2..256" or
    /// "1.5,2..64,128". Default: Google dp-accounting's default orders.
    #[arg(long, value_name = "LIST")]
    orders: Option<String>,
    /// Include the composed RDP curve [(α, ρ(α))] in the output.
    #[arg(long)]
    curve: bool,
    /// Which accountants to run.
    #[arg(long, value_enum, default_value = "all")]
    accountant: Accountant,
    /// Also calibrate: the smallest noise multiplier meeting this total ε at --delta over
    /// --compositions releases (at --sampling-rate), under PLD and under RDP.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    target_epsilon: Option<f64>,
    /// The PLD grid step in nats (at most 0.01; the default keeps the error under 1e-3).
    #[arg(long, value_name = "H", default_value_t = pld::DEFAULT_INTERVAL, allow_negative_numbers = true)]
    pld_interval: f64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// What `cape account` prints.
#[derive(Serialize)]
struct AccountOutput {
    #[serde(flatten)]
    rdp: Option<ComparisonReport>,
    pld: Option<PldReport>,
    calibration: Option<CalibrationReport>,
    time_ms: Timing,
}

/// The multiplier each accountant needs for `--target-epsilon`.
#[derive(Serialize)]
struct CalibrationReport {
    target_epsilon: f64,
    pld: Option<Calibration>,
    rdp: Option<Calibration>,
    /// 1 − z_PLD / z_RDP: the share of the noise PLD accounting saves at the same guarantee.
    noise_saved: Option<f64>,
}

#[derive(Serialize)]
struct Timing {
    rdp: Option<f64>,
    pld: Option<f64>,
}

pub fn run(args: AccountArgs) -> ExitCode {
    match report(&args) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("error: could not encode the report as JSON: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", human(&args, &report));
            }
            ExitCode::SUCCESS
        }
        Err(message) => crate::exit::fail(message),
    }
}

fn report(args: &AccountArgs) -> Result<AccountOutput, String> {
    let orders = args.orders.as_deref().map(parse_orders).transpose()?;
    let request = ComparisonRequest {
        noise_multiplier: args.noise_multiplier,
        compositions: args.compositions,
        delta: args.delta,
        sampling_rate: args.sampling_rate,
        collusion_factor: args.collusion_factor,
        orders,
        include_curve: args.curve,
    };
    let (mut rdp, mut pld) = (None, None);
    let mut time_ms = Timing { rdp: None, pld: None };
    if args.accountant != Accountant::Pld {
        let start = Instant::now();
        rdp = Some(request.run().map_err(|e| format!("{}: {e}", flag_of(&e)))?);
        time_ms.rdp = Some(start.elapsed().as_secs_f64() * 1e3);
    }
    if args.accountant != Accountant::Rdp {
        let start = Instant::now();
        pld = Some(request.pld(args.pld_interval).map_err(|e| match &e {
            PldError::Accountant(a) => format!("{}: {e}", flag_of(a)),
            _ => format!("--pld-interval: {e}"),
        })?);
        time_ms.pld = Some(start.elapsed().as_secs_f64() * 1e3);
    }
    let calibration = args.target_epsilon.map(|target| calibrate(args, target)).transpose()?;
    Ok(AccountOutput { rdp, pld, calibration, time_ms })
}

fn calibrate(args: &AccountArgs, target: f64) -> Result<CalibrationReport, String> {
    let q = args.sampling_rate.unwrap_or(1.0);
    let flag = |e: PldError| match &e {
        PldError::Accountant(AccountantError::TargetEpsilon(_)) => format!("--target-epsilon: {e}"),
        PldError::Accountant(a) => format!("{}: {e}", flag_of(a)),
        _ => format!("--pld-interval: {e}"),
    };
    let pld = (args.accountant != Accountant::Rdp)
        .then(|| {
            calibrate_noise_multiplier(target, args.delta, args.compositions, q, args.pld_interval)
        })
        .transpose()
        .map_err(flag)?;
    let rdp = (args.accountant != Accountant::Pld)
        .then(|| calibrate_noise_multiplier_rdp(target, args.delta, args.compositions, q))
        .transpose()
        .map_err(flag)?;
    let noise_saved = match (&pld, &rdp) {
        (Some(p), Some(r)) => Some(1.0 - p.noise_multiplier / r.noise_multiplier),
        _ => None,
    };
    Ok(CalibrationReport { target_epsilon: target, pld, rdp, noise_saved })
}

/// The flag a core validation error is about.
fn flag_of(e: &AccountantError) -> &'static str {
    match e {
        AccountantError::NoiseMultiplier(_) | AccountantError::LaplaceScale(_) => {
            "--noise-multiplier"
        }
        AccountantError::SamplingRate(_) => "--sampling-rate",
        AccountantError::CollusionFactor(_) => "--collusion-factor",
        AccountantError::ZeroCount => "--compositions",
        // Not raised here: `cape account` takes no (ε, δ)-DP releases.
        AccountantError::Delta(_) | AccountantError::ApproximateDelta(_) => "--delta",
        AccountantError::Epsilon(_) | AccountantError::ApproximateEpsilon(_) => "--epsilon",
        AccountantError::TargetEpsilon(_) => "--target-epsilon",
        AccountantError::Order(_)
        | AccountantError::NoOrders
        | AccountantError::CurveLength { .. } => "--orders",
    }
}

/// "1.5,2..64,128" → [1.5, 2, 3, …, 64, 128]. Ranges are inclusive and integer.
fn parse_orders(list: &str) -> Result<Vec<f64>, String> {
    let mut orders = Vec::new();
    for item in list.split(',').map(str::trim) {
        if let Some((a, b)) = item.split_once("..") {
            let (a, b) = (a.trim().parse::<u32>(), b.trim().parse::<u32>());
            match (a, b) {
                (Ok(a), Ok(b)) if a <= b && b - a <= 100_000 => {
                    orders.extend((a..=b).map(f64::from))
                }
                _ => {
                    return Err(format!(
                        "--orders: '{item}' is not an integer range a..b with a ≤ b (at most \
                         100000 orders)"
                    ));
                }
            }
        } else {
            let v = item
                .parse::<f64>()
                .map_err(|_| format!("--orders: '{item}' is not a number or a range a..b"))?;
            orders.push(v);
        }
    }
    Ok(orders)
}

fn human(args: &AccountArgs, out: &AccountOutput) -> String {
    let mut text = String::new();
    let what = match args.sampling_rate {
        None => format!("{} Gaussian releases", args.compositions),
        Some(q) => format!("{} Poisson-subsampled Gaussian releases (q = {q})", args.compositions),
    };
    text += &format!(
        "cape account: {what}, noise multiplier z = {}, δ = {:e}\n",
        args.noise_multiplier, args.delta
    );
    if let Some(r) = &out.rdp {
        text += &format!(
            "\nRDP and classical composition ({} RDP orders; {:.1} ms)\n",
            r.grid_orders,
            out.time_ms.rdp.unwrap_or(0.0)
        );
        text += "aggregator's view\n";
        text += &view_table(&r.aggregator);
        if let Some(c) = &r.collusion_aware {
            text += &format!(
                "collusion-aware view (c_S = {}, effective z/√c_S = {:.6})\n",
                c.collusion_factor, c.effective_noise_multiplier
            );
            text += &view_table(c);
        }
    }
    if let Some(p) = &out.pld {
        text += &format!(
            "\nprivacy loss distribution (pessimistic; {:.1} ms)\n",
            out.time_ms.pld.unwrap_or(0.0)
        );
        for (name, v) in std::iter::once(("aggregator's view", &p.aggregator))
            .chain(p.collusion_aware.as_ref().map(|c| ("collusion-aware view", c)))
        {
            let how = match v.interval {
                Some(h) => format!("grid step h = {h:e}, an upper bound"),
                None => "exact: unsampled Gaussians compose to a Gaussian".into(),
            };
            text += &format!("  {name:<32} ε = {:<14.6} {how}\n", v.epsilon);
        }
        if let Some(r) = &out.rdp {
            let best_rdp = r.aggregator.epsilon_rdp_improved.min(r.aggregator.epsilon_rdp);
            text += &format!(
                "  PLD vs best RDP (aggregator)     {:.6} vs {:.6} ({:+.2}%)\n",
                p.aggregator.epsilon,
                best_rdp,
                100.0 * (p.aggregator.epsilon / best_rdp - 1.0)
            );
        }
    }
    if let Some(c) = &out.calibration {
        text += &format!(
            "\ncalibration: the smallest z with ε ≤ {} at δ = {:e} over {} releases\n",
            c.target_epsilon, args.delta, args.compositions
        );
        for (name, cal) in [("PLD", &c.pld), ("RDP (Balle et al. 2020)", &c.rdp)] {
            if let Some(cal) = cal {
                text += &format!(
                    "  {name:<32} z = {:<14.6} (ε = {:.6})\n",
                    cal.noise_multiplier, cal.epsilon
                );
            }
        }
        if let Some(saved) = c.noise_saved {
            text +=
                &format!("  PLD needs {:.1}% less noise for the same guarantee\n", 100.0 * saved);
        }
    }
    text
}

fn view_table(v: &ViewReport) -> String {
    let mut rows: Vec<(String, f64, String)> = vec![
        ("RDP, standard conversion".into(), v.epsilon_rdp, format!("α = {:.4}", v.alpha_rdp)),
        (
            "RDP, standard, order grid".into(),
            v.epsilon_rdp_grid,
            format!("α = {}", v.alpha_rdp_grid),
        ),
        (
            "RDP, Balle et al. 2020".into(),
            v.epsilon_rdp_improved,
            format!("α = {:.4}", v.alpha_rdp_improved),
        ),
        (
            "RDP, Balle et al. 2020, grid".into(),
            v.epsilon_rdp_improved_grid,
            format!("α = {}", v.alpha_rdp_improved_grid),
        ),
    ];
    if let (Some(cf), Some(c)) = (v.epsilon_closed_form, v.rdp_slope) {
        rows.push(("closed form C + 2√(C ln 1/δ)".into(), cf, format!("C = {c:.6}")));
    }
    if let Some(e) = v.epsilon_exact {
        rows.push(("exact (analytic Gaussian)".into(), e, "tight".into()));
    }
    rows.push((
        "moments accountant".into(),
        v.epsilon_moments,
        format!("t = {:.4}", v.moments_order),
    ));
    if let Some(e) = v.epsilon_moments_as_printed {
        rows.push(("moments, quadratic as printed".into(), e, "spec §5 erratum: too high".into()));
    }
    rows.push((
        "basic composition".into(),
        v.epsilon_basic,
        format!(
            "ε₀ = {:.6} at δ₀ = {:.3e}",
            v.basic.per_release_epsilon, v.basic.per_release_delta
        ),
    ));
    rows.push((
        "strong composition (DRV'10)".into(),
        v.epsilon_strong,
        format!(
            "ε₀ = {:.6} at δ₀ = {:.3e}, δ' = δ/2",
            v.strong.per_release_epsilon, v.strong.per_release_delta
        ),
    ));
    let mut out = String::new();
    for (name, eps, note) in rows {
        out += &format!("  {name:<32} ε = {eps:<14.6} {note}\n");
    }
    if let Some(curve) = &v.rdp_curve {
        out += "  RDP curve (α, ρ(α)):\n";
        for (a, r) in curve {
            out += &format!("    {a:>8} {r:.6e}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_lists_and_ranges() {
        assert_eq!(parse_orders("1.5, 2..4,128").unwrap(), vec![1.5, 2.0, 3.0, 4.0, 128.0]);
        assert!(parse_orders("4..2").unwrap_err().contains("'4..2'"));
        assert!(parse_orders("two").unwrap_err().contains("'two'"));
    }
}
