//! `cape efpsn-attack`: "what a curious neighbour sees" (seed 003's iDLG experiment, analytic):
//! one agent's released gradient on a single image, the image read back from it, at γ = 0 and
//! the chosen γ values, for the paper's perturbed variables (the biases) and for all parameters.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use capelab_core::data::parse_csv;
use capelab_core::efpsn::attack::{Perturbed, Reconstruction, reconstruct};
use serde_json::json;

use super::args::DIGITS;
use crate::fm::parse_list;
use crate::outdir::{OutDir, with_out};
use crate::plot::{Colours, HeatmapGrid, Tile};

#[derive(clap::Args, Debug)]
pub struct EfpsnAttackArgs {
    /// A labelled CSV of square images with a `target` column [default: data/digits.csv in the
    /// working directory, which scripts/setup.sh writes].
    #[arg(long, visible_alias = "data-file", value_name = "PATH")]
    pub data: Option<PathBuf>,
    /// Which row's image the agent's gradient is computed on.
    #[arg(long, default_value_t = 0)]
    pub row: usize,
    /// Pixel values are divided by this public bound.
    #[arg(long, value_name = "B", default_value_t = 16.0)]
    pub feature_bound: f64,
    #[arg(long, value_name = "LIST", default_value = "0,10,1000,10000")]
    pub gammas: String,
    /// The attacked agent's number of neighbours (its mask variance is 2·d·σ_k²).
    #[arg(long, default_value_t = 2)]
    pub degree: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the figure goes [default: a new folder cape-out/efpsn-attack-NNN in the working
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn attack(
    args: &EfpsnAttackArgs,
    out_dir: &OutDir,
) -> Result<(Vec<Reconstruction>, Vec<PathBuf>), String> {
    let gammas = parse_list(&args.gammas, "--gammas")?;
    if let Some(g) = gammas.iter().find(|g| g.is_nan() || **g < 0.0) {
        return Err(format!("--gammas: γ = {g} must be ≥ 0 (0: no mask)"));
    }
    let (text, path) =
        crate::data_file::read(args.data.as_deref(), Path::new(DIGITS), "--data-file")?;
    let table = parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let ft = table.features_and_target("target").map_err(|e| format!("{}: {e}", path.display()))?;
    let row = ft
        .features
        .get(args.row)
        .ok_or_else(|| format!("--row {}: the table has {} rows", args.row, ft.features.len()))?;
    let side = (row.len() as f64).sqrt().round() as usize;
    if side * side != row.len() {
        return Err(format!("{} features are not a square image", row.len()));
    }
    let image: Vec<f64> = row.iter().map(|v| v / args.feature_bound).collect();
    let label = ft.target[args.row] as usize;
    let classes = ft.target.iter().fold(0.0f64, |m, &y| m.max(y)) as usize + 1;
    let mut out = Vec::new();
    for perturbed in [Perturbed::Biases, Perturbed::All] {
        for &gamma in &gammas {
            out.push(
                reconstruct(&image, label, classes, perturbed, gamma, args.degree, args.seed)
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    let mut tiles = vec![Tile {
        title: format!("the image (a {label})"),
        width: side,
        height: side,
        values: image.clone(),
    }];
    for r in &out {
        tiles.push(Tile {
            title: format!("{} γ={}: cos {:.3}", r.perturbed.name(), r.gamma, r.cosine),
            width: side,
            height: side,
            values: r.image.clone(),
        });
    }
    let grid = HeatmapGrid {
        title: "Read back from one released gradient (EFPSN, softmax)".into(),
        tiles,
        columns: gammas.len() + 1,
        tile_px: 190,
        colours: Colours::Sequential,
        shared_scale: false,
    };
    let files = grid.write(&out_dir.join("efpsn-reconstruction")).map_err(|e| e.to_string())?;
    Ok((out, files))
}

pub fn run(args: EfpsnAttackArgs) -> ExitCode {
    match with_out(args.out.as_deref(), "efpsn-attack", |out| attack(&args, out)) {
        Ok((recs, files)) => {
            if args.json {
                let v = json!({ "row": args.row, "degree": args.degree, "reconstructions": recs.iter().map(|r| json!({
                    "perturbed": r.perturbed.name(), "gamma": r.gamma, "cosine": r.cosine, "mask_to_signal": r.mask_to_signal,
                })).collect::<Vec<_>>(), "files": files });
                println!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
            } else {
                println!(
                    "image {} of {}; cosine of the image read from the agent's released gradient:",
                    args.row,
                    args.data.as_deref().unwrap_or(Path::new(DIGITS)).display()
                );
                println!(
                    "  {:<8} {:>10} {:>10} {:>22}",
                    "perturbed", "γ", "cosine", "‖mask‖/‖signal‖ (W)"
                );
                for r in &recs {
                    println!(
                        "  {:<8} {:>10} {:>10.6} {:>22.3e}",
                        r.perturbed.name(),
                        r.gamma,
                        r.cosine,
                        r.mask_to_signal
                    );
                }
                crate::exit::print_written(&files);
            }
            ExitCode::SUCCESS
        }
        Err(m) => crate::exit::fail(m),
    }
}
