//! Loading and normalising a data set for FM and the network: synthetic, the fetched CSVs, or
//! any CSV with public bounds (see the module doc of `fm`).

use std::path::{Path, PathBuf};

use capelab_core::data::{
    Bounds, Dataset, Normalisation, Normaliser, TargetKind, parse_csv, synthetic,
};
use nalgebra::DVector;
use serde_json::Value;

use super::args::DataArgs;

/// A loaded, normalised data set.
pub struct Loaded {
    pub name: String,
    pub train: Dataset,
    pub test: Dataset,
    pub w_star: Option<DVector<f64>>,
    pub normalisation: Normalisation,
}

/// Loads `args.data` for a task with targets `kind`, split with `test_fraction`, seeded.
/// `synthetic_total` overrides how many synthetic records are generated in all.
pub fn load(
    args: &DataArgs,
    kind: TargetKind,
    test_fraction: f64,
    seed: u64,
    synthetic_total: Option<usize>,
) -> Result<Loaded, String> {
    if args.data == "synthetic" {
        if let Some(file) = &args.data_file {
            return Err(format!(
                "--data-file {}: --data synthetic is generated and reads no file",
                file.display()
            ));
        }
        // Generated records are i.i.d., so the first ones are the training set: exactly N of them.
        let (total, n_train) = match synthetic_total {
            Some(total) => (total, ((1.0 - test_fraction) * total as f64).round() as usize),
            None => {
                let n = args.samples.unwrap_or(10_000);
                (n + (n as f64 * test_fraction / (1.0 - test_fraction)).round() as usize, n)
            }
        };
        let d = args.features.unwrap_or(20);
        if d == 0 || total < 4 {
            return Err(format!("--features {d} and --samples {n_train} are too small"));
        }
        let (raw, w_star, normaliser) = match kind {
            TargetKind::Regression => {
                let (data, w) = synthetic::regression(total, d, 0.0, seed);
                (data, Some(w), Normaliser::AlreadyNormalised)
            }
            TargetKind::Binary => {
                let data = synthetic::two_gaussians(total, d, 0.25, seed);
                let radius = synthetic::two_gaussians_radius(d, 0.25);
                (data, None, Normaliser::RowClip { radius, target: None })
            }
        };
        let idx: Vec<usize> = (0..total).collect();
        let (train, test) = (raw.select(&idx[..n_train]), raw.select(&idx[n_train..]));
        let fitted = normaliser.fit(&train, kind).map_err(|e| e.to_string())?;
        let name = match kind {
            TargetKind::Regression => "synthetic regression".to_string(),
            TargetKind::Binary => "synthetic two Gaussians".to_string(),
        };
        return Ok(Loaded {
            name,
            train: fitted.apply(&train).map_err(|e| e.to_string())?,
            test: fitted.apply(&test).map_err(|e| e.to_string())?,
            w_star,
            normalisation: fitted.description.clone(),
        });
    }
    let (name, text, path) = match args.data.as_str() {
        named @ ("diabetes" | "breast-cancer") => {
            let file = if named == "diabetes" { "diabetes.csv" } else { "breast_cancer.csv" };
            let default = args.data_dir.join(file);
            let (text, path) =
                crate::data_file::read(args.data_file.as_deref(), &default, "--data-file")?;
            (named.to_string(), text, path)
        }
        other => {
            if let Some(file) = &args.data_file {
                return Err(format!(
                    "--data-file {}: --data {other} already names the file to read",
                    file.display()
                ));
            }
            let path = PathBuf::from(other);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!(
                    "--data {other}: cannot read it ({e}); use synthetic, diabetes, breast-cancer \
                     or the path of a CSV file"
                )
            })?;
            (other.to_string(), text, path)
        }
    };
    let table = parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let split = table.features_and_target(&args.target).map_err(|e| format!("--target: {e}"))?;
    let data = Dataset::from_rows(&split.features, &split.target).map_err(|e| e.to_string())?;
    let (mut train, test) = data.split(test_fraction, seed).map_err(|e| e.to_string())?;
    if let Some(n) = args.samples {
        if n > train.len() {
            return Err(format!(
                "--samples {n} is more than the {} training records of {name}",
                train.len()
            ));
        }
        train = train.head(n);
    }
    let normaliser = match (&args.bounds, args.data_dependent_scaling) {
        (Some(_), true) => {
            return Err("give either --bounds or --data-dependent-scaling, not both".into());
        }
        (Some(file), false) => Normaliser::PublicBounds(read_bounds(file, &split.feature_names)?),
        (None, true) => Normaliser::DataDependent,
        (None, false) => {
            return Err(format!(
                "{name} needs a normalisation into FM's domain: --bounds FILE.json with public \
                 bounds for {:?} (and the target), or --data-dependent-scaling (the papers' \
                 recipe, not private)",
                split.feature_names
            ));
        }
    };
    let fitted = normaliser.fit(&train, kind).map_err(|e| e.to_string())?;
    Ok(Loaded {
        name,
        train: fitted.apply(&train).map_err(|e| e.to_string())?,
        test: fitted.apply(&test).map_err(|e| e.to_string())?,
        w_star: None,
        normalisation: fitted.description.clone(),
    })
}

fn read_bounds(file: &Path, names: &[String]) -> Result<Bounds, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("--bounds: cannot read {}: {e}", file.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("--bounds: {e}"))?;
    let pair = |x: &Value, what: &str| -> Result<(f64, f64), String> {
        match x.as_array().map(|a| a.iter().map(Value::as_f64).collect::<Vec<_>>()) {
            Some(a) if a.len() == 2 && a[0].is_some() && a[1].is_some() => {
                Ok((a[0].unwrap_or(0.0), a[1].unwrap_or(0.0)))
            }
            _ => Err(format!("--bounds: {what} must be [lo, hi], got {x}")),
        }
    };
    let features = names
        .iter()
        .map(|n| {
            let b = v["features"].get(n).ok_or_else(|| format!("--bounds: no bounds for '{n}'"))?;
            pair(b, n)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let target = match v.get("target") {
        Some(t) => Some(pair(t, "target")?),
        None => None,
    };
    Ok(Bounds { features, target })
}
