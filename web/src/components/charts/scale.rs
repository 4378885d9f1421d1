/*!
Axes for the SVG charts: linear and log-10 scales, "nice" tick positions and their labels.

Pure logic, tested natively.
*/

/// How data values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// Base 10; `min` and `max` are positive.
    Log {
        min: f64,
        max: f64,
    },
}

impl Scale {
    /// A linear scale covering `values` (and `include`, e.g. 0), widened to nice tick positions.
    pub fn linear_fit(values: impl IntoIterator<Item = f64>, include: &[f64]) -> Scale {
        let (lo, hi) = finite_range(values.into_iter().chain(include.iter().copied()));
        let (lo, hi) = match (lo, hi) {
            (Some(lo), Some(hi)) if hi > lo => (lo, hi),
            (Some(v), Some(_)) => (v - 0.5 * v.abs().max(1e-9), v + 0.5 * v.abs().max(1e-9)),
            _ => (0.0, 1.0),
        };
        let step = nice_step((hi - lo) / 5.0);
        Scale::Linear {
            min: (lo / step + 1e-9).floor() * step,
            max: (hi / step - 1e-9).ceil() * step,
        }
    }

    /// Where `value` falls, as a fraction of the axis (0 at `min`, 1 at `max`; outside the range
    /// it goes beyond, and a non-positive value on a log axis is `None`).
    pub fn fraction(&self, value: f64) -> Option<f64> {
        if !value.is_finite() {
            return None;
        }
        match *self {
            Scale::Linear { min, max } => Some((value - min) / (max - min)),
            Scale::Log { min, max } => {
                (value > 0.0).then(|| (value / min).log10() / (max / min).log10())
            }
        }
    }

    /// Tick positions with their labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Scale::Linear { min, max } => {
                let step = nice_step((max - min) / 5.0);
                // A little slack: 0.2 / 0.1 is 2.0000000000000004 in binary.
                let first = (min / step - 1e-9).ceil() as i64;
                let last = (max / step + 1e-9).floor() as i64;
                (first..=last)
                    .map(|i| {
                        let v = i as f64 * step;
                        (v, format_tick(v, step))
                    })
                    .collect()
            }
            Scale::Log { min, max } => {
                let (lo, hi) = (min.log10().round() as i32, max.log10().round() as i32);
                // At most about eight labels: every k-th decade.
                let every = ((hi - lo) as f64 / 8.0).ceil().max(1.0) as i32;
                (lo..=hi)
                    .filter(|e| (e - lo) % every == 0)
                    .map(|e| (10f64.powi(e), power_of_ten(e)))
                    .collect()
            }
        }
    }
}

fn finite_range(values: impl Iterator<Item = f64>) -> (Option<f64>, Option<f64>) {
    values.filter(|v| v.is_finite()).fold((None, None), |(lo, hi), v| {
        (Some(lo.map_or(v, |l: f64| l.min(v))), Some(hi.map_or(v, |h: f64| h.max(v))))
    })
}

/// 1, 2 or 5 times a power of ten, at least `rough`.
pub fn nice_step(rough: f64) -> f64 {
    if !(rough.is_finite() && rough > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(rough.log10().floor());
    let m = rough / power;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A tick label with as many decimals as the step needs.
fn format_tick(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let v = if value.abs() < step * 1e-6 { 0.0 } else { value };
    if step >= 1e5 || (step < 1e-4 && v != 0.0) {
        format!("{v:.1e}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// "10⁻⁵" with Unicode superscripts (readable in SVG text and PNG exports alike).
pub fn power_of_ten(exponent: i32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    if exponent == 0 {
        return "1".into();
    }
    if exponent == 1 {
        return "10".into();
    }
    let mut s = String::from("10");
    if exponent < 0 {
        s.push('⁻');
    }
    for d in exponent.unsigned_abs().to_string().bytes() {
        s.push(DIGITS[(d - b'0') as usize]);
    }
    s
}

/// A number for a label: 4 significant digits, scientific when very small or large.
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_fits_to_nice_ticks() {
        let s = Scale::linear_fit([0.13, 0.87], &[]);
        assert_eq!(s, Scale::Linear { min: 0.0, max: 1.0 });
        let labels: Vec<String> = s.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        assert_eq!(s.fraction(0.25), Some(0.25));
        // including zero, and a single value
        assert_eq!(Scale::linear_fit([3.0, 7.0], &[0.0]), Scale::Linear { min: 0.0, max: 8.0 });
        let single = Scale::linear_fit([2.0], &[]);
        assert!(matches!(single, Scale::Linear { min, max } if min < 2.0 && max > 2.0));
        assert_eq!(Scale::linear_fit([], &[]), Scale::Linear { min: 0.0, max: 1.0 });
        // binary fractions do not lose the end ticks
        let labels: Vec<String> =
            Scale::linear_fit([0.2, 0.6], &[]).ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0.2", "0.3", "0.4", "0.5", "0.6"]);
    }

    #[test]
    fn log_axes_place_decades_evenly_and_label_them() {
        let s = Scale::Log { min: 1e-7, max: 1.0 };
        assert!((s.fraction(1e-4).unwrap() - 3.0 / 7.0).abs() < 1e-12);
        assert_eq!(s.fraction(0.0), None);
        let ticks = Scale::Log { min: 1e-16, max: 1.0 }.ticks();
        assert!(ticks.len() <= 9, "{ticks:?}");
        assert_eq!(ticks.last().unwrap().1, "1");
        assert_eq!(ticks[0].1, "10⁻¹⁶");
    }

    #[test]
    fn labels_read_well() {
        assert_eq!(nice_step(0.17), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(power_of_ten(-5), "10⁻⁵");
        assert_eq!(power_of_ten(12), "10¹²");
        assert_eq!(format_tick(1e-17, 0.2), "0.0");
        assert_eq!(format_tick(15.0, 5.0), "15");
        assert_eq!(format_value(0.123456), "0.1235");
        assert_eq!(format_value(4.7e-6), "4.700e-6");
        assert_eq!(format_value(f64::NAN), "—");
    }
}
