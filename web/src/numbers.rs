//! Numbers as people read them on a page: rounded to what they mean (three significant digits),
//! whole numbers grouped by thousands, very small and very large ones as powers of ten.

/// A number as a person reads it: whole numbers grouped by thousands, others to 3 significant
/// digits, very small or large ones in powers of ten.
pub fn show(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.fract() == 0.0 && v.abs() < 1e7 {
        let s = group(v.abs() as usize);
        return if v < 0.0 { format!("−{s}") } else { s };
    }
    let a = v.abs();
    let s = if !(1e-3..1e7).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = a / 10f64.powi(e);
        let m = format!("{m:.2}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e = superscript(e);
        if m == "1" { format!("10{e}") } else { format!("{m}·10{e}") }
    } else {
        let digits = (3 - 1 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{a:.digits$}");
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
    };
    if v < 0.0 { format!("−{s}") } else { s }
}

/// A whole number with thin spaces between groups of three: 100 000.
pub fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

/// An exponent in superscript digits: −5 → ⁻⁵.
fn superscript(e: i32) -> String {
    e.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            d => ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹']
                [d.to_digit(10).unwrap_or(0) as usize],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shown_rounded_to_what_they_mean() {
        assert_eq!(show(100_000.0), "100\u{202f}000");
        assert_eq!(show(0.5), "0.5");
        assert_eq!(show(1e-5), "10⁻⁵");
        assert_eq!(show(2.5e-7), "2.5·10⁻⁷");
        assert_eq!(show(26.299338143648423), "26.3");
        assert_eq!(show(-1.0), "−1");
        assert_eq!(show(1e308), "10³⁰⁸");
        assert_eq!(show(1e8), "10⁸");
        assert_eq!(show(28_155.0), "28\u{202f}155");
        assert_eq!(show(1234.5678), "1235");
    }
}
