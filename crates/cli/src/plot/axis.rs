//! The axes of line charts: log10-transformed or linear values, our own tick positions and tick
//! labels in data units.

use plotters::prelude::*;

/// A linear axis over (possibly log10-transformed) values with our own tick positions: bold ticks
/// from [`ticks`], light grid lines at the intermediate multiples of a log axis.
pub(super) struct Axis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Axis {
    pub(super) fn new(lo: f64, hi: f64, log: bool) -> Self {
        let bold = ticks(lo, hi, log);
        let light = if log {
            ((lo.floor() as i32)..=(hi.ceil() as i32))
                .flat_map(|d| (2..10).map(move |m| f64::from(d) + f64::from(m).log10()))
                .filter(|v| *v >= lo && *v <= hi && !bold.iter().any(|b| (b - v).abs() < 1e-9))
                .collect()
        } else {
            vec![]
        };
        Self { lo, hi, bold, light }
    }
}

impl Ranged for Axis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            plotters::coord::ranged1d::KeyPointWeight::Bold => self.bold.clone(),
            plotters::coord::ranged1d::KeyPointWeight::Any => {
                let mut all = self.bold.clone();
                all.extend(&self.light);
                all
            }
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

pub(super) fn transform(v: f64, log: bool) -> Option<f64> {
    if !v.is_finite() {
        None
    } else if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

/// Tick positions in transformed units.
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let (a, b) = (lo.ceil() as i32, hi.floor() as i32);
        // At most about ten labelled decades.
        let stride = ((b - a) / 10 + 1).max(1) as usize;
        let mut t: Vec<f64> = (a..=b).step_by(stride).map(f64::from).collect();
        if hi - lo < 3.0 {
            for d in (lo.floor() as i32)..=(hi.ceil() as i32) {
                for m in [2.0f64, 5.0] {
                    let v = f64::from(d) + m.log10();
                    if v >= lo && v <= hi {
                        t.push(v);
                    }
                }
            }
        }
        t.sort_by(f64::total_cmp);
        t
    } else {
        let raw = (hi - lo) / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let start = (lo / step).ceil() as i64;
        let end = (hi / step).floor() as i64;
        (start..=end).map(|k| k as f64 * step).collect()
    }
}

/// A tick label in data units.
pub(super) fn tick_label(v: f64, log: bool) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-4..1e5).contains(&a) {
        let e = a.log10().floor();
        let m = x / 10f64.powf(e);
        if (m.abs() - 1.0).abs() < 1e-6 {
            format!("{}1e{}", if x < 0.0 { "-" } else { "" }, e as i32)
        } else {
            format!("{m:.1}e{}", e as i32)
        }
    } else {
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::with_suffix;
    use super::*;

    #[test]
    fn ticks_and_labels_read_well() {
        assert_eq!(ticks(-3.2, 1.1, true), vec![-3.0, -2.0, -1.0, 0.0, 1.0]);
        let short = ticks(-0.1, 1.05, true);
        assert!(short.contains(&0.0) && short.contains(&2f64.log10()) && short.contains(&1.0));
        let linear = ticks(0.0, 1.0, false);
        assert_eq!(linear.len(), 6);
        assert!(
            linear.iter().zip([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]).all(|(a, b)| (a - b).abs() < 1e-12)
        );
        assert_eq!(tick_label(-3.0, true), "0.001");
        assert_eq!(tick_label(1.0, true), "10");
        assert_eq!(tick_label(-5.0, true), "1e-5");
        assert_eq!(tick_label(5e-4, false), "0.0005");
        assert_eq!(tick_label(0.25, false), "0.25");
        assert_eq!(with_suffix(Path::new("d/nn-eps0.01"), "png"), Path::new("d/nn-eps0.01.png"));
        assert_eq!(tick_label(2.5e6, false), "2.5e6");
    }
}
