/*!
`cape account`: every accounting of one homogeneous run, printed as a table or as one JSON object.

The numbers come from `capelab_core::accountant::comparison`; this file only parses flags, maps
errors to the flag at fault, and formats. JSON keys (aggregator's view at the top level):
`epsilon_rdp`/`alpha_rdp` (standard conversion, exact optimum for unsampled runs),
`epsilon_rdp_grid`, `epsilon_rdp_improved`/`alpha_rdp_improved` (Balle et al. 2020),
`epsilon_rdp_improved_grid`, `epsilon_closed_form`, `epsilon_exact`, `epsilon_moments`/`moments_order`,
`epsilon_moments_as_printed`, `epsilon_basic`, `epsilon_strong` (with `basic`/`strong` per-release
pairs), and `collusion_aware` (the same keys under c_S) when `--collusion-factor` is given.
*/

use std::process::ExitCode;

use capelab_core::accountant::{AccountantError, ComparisonReport, ComparisonRequest, ViewReport};

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
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
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
                print!("{}", human(&report));
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn report(args: &AccountArgs) -> Result<ComparisonReport, String> {
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
    request.run().map_err(|e| format!("{}: {e}", flag_of(&e)))
}

/// The flag a core validation error is about.
fn flag_of(e: &AccountantError) -> &'static str {
    match e {
        AccountantError::NoiseMultiplier(_) => "--noise-multiplier",
        AccountantError::SamplingRate(_) => "--sampling-rate",
        AccountantError::CollusionFactor(_) => "--collusion-factor",
        AccountantError::ZeroCount => "--compositions",
        AccountantError::Delta(_) => "--delta",
        AccountantError::Epsilon(_) => "--epsilon",
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

fn human(r: &ComparisonReport) -> String {
    let mut out = String::new();
    let what = match r.sampling_rate {
        None => format!("{} Gaussian releases", r.compositions),
        Some(q) => format!("{} Poisson-subsampled Gaussian releases (q = {q})", r.compositions),
    };
    out += &format!(
        "cape account: {what}, noise multiplier z = {}, δ = {:e}, {} RDP orders\n",
        r.noise_multiplier, r.delta, r.grid_orders
    );
    out += "\naggregator's view\n";
    out += &view_table(&r.aggregator);
    if let Some(c) = &r.collusion_aware {
        out += &format!(
            "\ncollusion-aware view (c_S = {}, effective z/√c_S = {:.6})\n",
            c.collusion_factor, c.effective_noise_multiplier
        );
        out += &view_table(c);
    }
    out
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
