//! What the dashboard says when sites decline a study for their privacy budget: which site, and
//! to how much its budget would have to rise (from the [`Shortfall`] each such site sends with its
//! refusal; the ledger itself never leaves the site). A refusal for the budget comes before any
//! release: nothing was recorded or sent.

use capelab_core::accountant::ledger::Shortfall;

use crate::numbers::show;

/// One site's decline in words: for the budget, what to raise; otherwise its own reason.
pub fn decline_sentence(name: &str, reason: &str, shortfall: Option<&Shortfall>) -> String {
    match shortfall {
        Some(s) => {
            let place = format!("on {name}'s page");
            format!("{name} declined before releasing anything: {}", raise_sentence(s, &place))
        }
        None => format!("{name} declined: {reason}"),
    }
}

/// "its budget (ε = 10 at δ = 10⁻⁵) does not cover this study: raise it to at least ε = 11.7
/// (1.7 more) {place}", `place` saying where the budget is set ("on Lab A's page").
pub fn raise_sentence(s: &Shortfall, place: &str) -> String {
    match (s.needed, s.raise_by()) {
        (Some(needed), Some(more)) => format!(
            "its budget (ε = {} at δ = {}) does not cover this study: raise it to at least ε = {} \
             ({} more) {place}",
            show(s.budget),
            show(s.delta),
            show(round_up(needed)),
            show(round_up(more))
        ),
        _ => format!(
            "its earlier (ε, δ) releases use up its budget's δ = {}: no ε covers this study; raise \
             its δ {place}",
            show(s.delta)
        ),
    }
}

/// On a site's own page: it declined for its budget, and the ledger card below is where to raise it.
pub fn own_decline(s: &Shortfall) -> String {
    format!(
        "This site declined before releasing anything (nothing was recorded or sent): {}.",
        raise_sentence(s, "in the ledger card below")
    )
}

/// The sites that declined for their budget, once, for above a result: "2 sites declined for
/// their budget: raise Lab A's to ε = 11.7 and Lab B's to ε = 12.1". `None` when none did.
pub fn summary<'a>(declines: impl IntoIterator<Item = (String, &'a Shortfall)>) -> Option<String> {
    let parts: Vec<String> = declines
        .into_iter()
        .map(|(name, s)| match s.needed {
            Some(n) => format!("{name}'s to ε = {}", show(round_up(n))),
            None => format!("{name}'s δ (used up by earlier releases)"),
        })
        .collect();
    match parts.len() {
        0 => None,
        1 => Some(format!(
            "1 site declined for its budget, before releasing anything: raise {}.",
            parts[0]
        )),
        n => {
            let (last, rest) = parts.split_last().expect("n ≥ 2");
            Some(format!(
                "{n} sites declined for their budgets, before releasing anything: raise {} and {last}.",
                rest.join(", ")
            ))
        }
    }
}

/// Up to the third significant digit, so the raised budget is never just short of what is needed.
fn round_up(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return v;
    }
    let scale = 10f64.powi(2 - v.log10().floor() as i32);
    (v * scale).ceil() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_decline_says_what_to_raise_to() {
        let s = Shortfall { budget: 10.0, needed: Some(11.6594), delta: 1e-5 };
        let text = decline_sentence("Lab A", "insufficient privacy budget …", Some(&s));
        assert_eq!(
            text,
            "Lab A declined before releasing anything: its budget (ε = 10 at δ = 10⁻⁵) does not \
             cover this study: raise it to at least ε = 11.7 (1.66 more) on Lab A's page"
        );
        let no_delta = Shortfall { budget: 10.0, needed: None, delta: 1e-5 };
        assert!(raise_sentence(&no_delta, "below").contains("raise its δ below"));
        assert_eq!(
            decline_sentence("Lab C", "its data does not fit", None),
            "Lab C declined: its data does not fit"
        );
        let two = summary([("Lab A".to_owned(), &s), ("Lab B".to_owned(), &no_delta)]).unwrap();
        assert!(two.starts_with("2 sites declined for their budgets"), "{two}");
        assert!(two.contains("Lab A's to ε = 11.7 and Lab B's δ"), "{two}");
        assert_eq!(summary(std::iter::empty()), None);
    }

    #[test]
    fn raised_budgets_are_rounded_up_never_down() {
        assert_eq!(round_up(11.6594), 11.7);
        assert_eq!(round_up(11.6), 11.6);
        assert_eq!(round_up(0.012341), 0.0124);
        assert!(round_up(123.01) >= 123.01);
    }
}
