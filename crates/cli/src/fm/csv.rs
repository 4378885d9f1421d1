//! The CSV of `cape fm-sweep`: one row per (x, mechanism).

use std::path::Path;

use super::sweep::Point;

/// A number for a CSV cell: plain decimals in the usual range, exponent notation outside it
/// (e.g. a non-private MSE of 1e-31), empty for a missing value.
pub fn csv_num(v: Option<f64>) -> String {
    match v {
        None => String::new(),
        Some(v) if v == 0.0 || !v.is_finite() || (1e-4..1e6).contains(&v.abs()) => v.to_string(),
        Some(v) => format!("{v:e}"),
    }
}

pub(super) fn write_csv(path: &Path, axis: &str, points: &[Point]) -> std::io::Result<()> {
    let mut s = format!(
        "{axis},mechanism,runs,mean,sd,se,median,min,max,train_loss_mean,err_w_mean,\
         epsilon_guaranteed,delta_guaranteed,epsilon_accountant,epsilon_theorem1_exact,\
         all_trimmed_runs\n"
    );
    for p in points {
        let cells = [
            csv_num(Some(p.x)),
            p.mechanism.clone(),
            p.runs.to_string(),
            csv_num(Some(p.mean)),
            csv_num(Some(p.sd)),
            csv_num(Some(p.se)),
            csv_num(Some(p.median)),
            csv_num(Some(p.min)),
            csv_num(Some(p.max)),
            csv_num(Some(p.train_loss_mean)),
            csv_num(p.err_w_mean),
            csv_num(Some(p.epsilon_guaranteed)),
            csv_num(Some(p.delta_guaranteed)),
            p.epsilon_accountant.to_string(),
            csv_num(p.epsilon_theorem1),
            p.all_trimmed_runs.to_string(),
        ];
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    std::fs::write(path, s)
}
