/*!
What every study form shares: a refusal names the field it is about, so the page shows it beside
that field, in the form's own words and units; the readers of typed numbers, each with the range
a run can take; and the field components that show a field's error and clear it once the field
changes.

A form is read when Start is pressed, before anything is sent or charged. Every number a run
would trip over later (a size too large to allocate, a noise scale the ring cannot carry, a step
that sends the iterates to infinity) has its range here, checked at that moment.
*/

use std::fmt::Display;

use leptos::prelude::*;

use crate::numbers::{group, show};

/// Why a form did not start: which field (the id of its input, so the page shows the message
/// beside it) and what is wrong, in the form's own words. `field: None` is about the form as a
/// whole (too few sites present, two fields that do not fit together).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct FormError {
    pub field: Option<&'static str>,
    pub message: String,
}

impl FormError {
    /// An error about the field whose input has the id `field`.
    pub fn at(field: &'static str, message: impl Into<String>) -> Self {
        FormError { field: Some(field), message: message.into() }
    }

    /// An error about the form as a whole.
    pub fn whole(message: impl Into<String>) -> Self {
        FormError { field: None, message: message.into() }
    }

    /// Too few sites for a study that needs `needed`.
    pub fn too_few_sites(present: usize, needed: usize, why: &str) -> Self {
        let sites = if present == 1 { "site is" } else { "sites are" };
        FormError::whole(format!(
            "{present} {sites} present: this study needs at least {needed} ({why})."
        ))
    }
}

/// What people type into a form by mistake (and the browser's form fuzzer types into every
/// field): each must be a run or a refusal named by its field, never a panic.
#[cfg(test)]
pub const FUZZ: [&str; 10] =
    ["0", "-1", "1e308", "1e12", "1e-320", "NaN", "text", "", "100000000", "  0.5  "];

/// A form's text field as the fuzz tests reach it: its name and where its text is kept.
#[cfg(test)]
pub type FuzzField<F> = (&'static str, fn(&mut F) -> &mut String);

/// Types every [`FUZZ`] value into every one of `fields`, each time into a fresh `base()`, and
/// hands the filled form to `check` with the field's id and the typed text: every form's
/// `typed_nonsense_in_any_field_is_a_named_refusal_never_a_panic` test.
#[cfg(test)]
pub fn each_mistake<F>(
    fields: &[FuzzField<F>],
    base: impl Fn() -> F,
    mut check: impl FnMut(&'static str, &str, F),
) {
    for &(id, field) in fields {
        for typed in FUZZ {
            let mut form = base();
            *field(&mut form) = typed.to_string();
            check(id, typed, form);
        }
    }
}

/// One field of a form: its input's id and its label as the form shows it (what messages name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub id: &'static str,
    pub label: &'static str,
}

impl Field {
    pub const fn new(id: &'static str, label: &'static str) -> Self {
        Field { id, label }
    }

    /// An error about this field: "{label}: {message}".
    pub fn error(self, message: impl Display) -> FormError {
        FormError::at(self.id, format!("{}: {message}", self.label))
    }

    /// A number as typed (spaces around it and between digit groups are fine, "1e-5" too).
    pub fn real(self, text: &str) -> Result<f64, FormError> {
        let cleaned = clean(text);
        if cleaned.is_empty() {
            return Err(self.error("enter a number"));
        }
        if cleaned.contains(',') {
            return Err(self.error(format!(
                "“{}” has a comma: write decimals with a point (0.5), and thousands without one",
                text.trim()
            )));
        }
        match cleaned.parse::<f64>() {
            Ok(v) if v.is_finite() && is_plain_number(&cleaned) => Ok(v),
            Ok(_) if is_plain_number(&cleaned) => {
                Err(self.error(format!("“{}” is too large to be a number here", text.trim())))
            }
            _ => Err(self.error(format!("“{}” is not a number", text.trim()))),
        }
    }

    /// A number from `min` to `max` (both included).
    pub fn real_in(self, text: &str, min: f64, max: f64) -> Result<f64, FormError> {
        let v = self.real(text)?;
        if v < min || v > max {
            return Err(self.error(format!(
                "{} is outside the range this field takes: from {} to {}",
                show(v),
                show(min),
                show(max)
            )));
        }
        Ok(v)
    }

    /// A number above 0 and at most `max`, at least `min` (what a positive scale needs).
    pub fn positive(self, text: &str, min: f64, max: f64) -> Result<f64, FormError> {
        let v = self.real(text)?;
        if v <= 0.0 {
            return Err(self.error(format!("must be more than 0 (it is {})", show(v))));
        }
        if v < min {
            return Err(self.error(format!(
                "{} is too small: the least it takes is {}",
                show(v),
                show(min)
            )));
        }
        if v > max {
            return Err(self.error(format!(
                "{} is too large: the most it takes is {}",
                show(v),
                show(max)
            )));
        }
        Ok(v)
    }

    /// A whole number from `min` to `max`. "1e4" and "10 000" read as 10 000.
    pub fn count(self, text: &str, min: usize, max: usize) -> Result<usize, FormError> {
        let cleaned = clean(text);
        if cleaned.is_empty() {
            return Err(self.error("enter a whole number"));
        }
        let value = match cleaned.parse::<u64>() {
            Ok(n) => n as f64,
            Err(_) => match cleaned.parse::<f64>() {
                Ok(v) if v.is_finite() && is_plain_number(&cleaned) => v,
                _ if cleaned.contains(',') => {
                    return Err(self.error(format!(
                        "“{}” has a comma: write whole numbers without one",
                        text.trim()
                    )));
                }
                _ => return Err(self.error(format!("“{}” is not a number", text.trim()))),
            },
        };
        if value.fract() != 0.0 {
            return Err(self.error(format!("{} is not a whole number", show(value))));
        }
        if value < min as f64 {
            return Err(self.error(format!(
                "{} is too few: the least it takes is {}",
                show(value),
                group(min)
            )));
        }
        if value > max as f64 {
            return Err(self.error(format!(
                "{} is too many: the most it takes is {}",
                show(value),
                group(max)
            )));
        }
        Ok(value as usize)
    }

    /// An optional whole number: `None` when the field is left empty.
    pub fn optional_count(
        self,
        text: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<usize>, FormError> {
        if clean(text).is_empty() { Ok(None) } else { self.count(text, min, max).map(Some) }
    }
}

/// The text without spaces around it or between digit groups ("10 000", "1 e-5" is not).
fn clean(text: &str) -> String {
    text.trim()
        .chars()
        .filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{2009}' | '\u{202f}' | '_' | '\t'))
        .collect()
}

/// Rust's parser also takes "inf", "NaN" and "infinity": a form takes digits only.
fn is_plain_number(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && text.chars().any(|c| c.is_ascii_digit())
}

/// The form's error beside the field it names (`data-testid="field-error"`, `data-field` = the
/// field's id), or nothing.
#[component]
pub fn FieldError(field: &'static str, error: RwSignal<Option<FormError>>) -> impl IntoView {
    let message = move || {
        error.with(|e| e.as_ref().filter(|e| e.field == Some(field)).map(|e| e.message.clone()))
    };
    move || {
        message().map(|m| {
            view! {
                <span class="field-error" id=format!("{field}-error") role="alert"
                    data-testid="field-error" data-field=field>{m}</span>
            }
        })
    }
}

/// A typed field: its label, its input (bound to `value`) and its error beside it. Typing in it
/// clears an error about it (or about the whole form).
#[component]
pub fn TextField(
    field: Field,
    value: RwSignal<String>,
    error: RwSignal<Option<FormError>>,
    /// `inputmode`: "decimal" (the default) or "numeric".
    #[prop(optional)]
    numeric: bool,
    #[prop(optional, into)] placeholder: MaybeProp<String>,
) -> impl IntoView {
    let invalid = move || error.with(|e| e.as_ref().is_some_and(|e| e.field == Some(field.id)));
    // An error about this field, or about the form as a whole, is stale once the field changes.
    let stale =
        move || error.with(|e| e.as_ref().is_some_and(|e| e.field.is_none_or(|f| f == field.id)));
    view! {
        <label>
            {field.label}
            <input id=field.id inputmode=if numeric { "numeric" } else { "decimal" }
                placeholder=move || placeholder.get()
                aria-invalid=move || invalid().to_string()
                aria-describedby=format!("{}-error", field.id)
                bind:value=value
                on:input=move |_| if stale() { error.set(None) } />
            <FieldError field=field.id error />
        </label>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Field = Field::new("f", "values per site");

    #[test]
    fn counts_read_as_people_type_them_and_name_the_range() {
        assert_eq!(F.count(" 10 000 ", 1, 100_000), Ok(10_000));
        assert_eq!(F.count("1e4", 1, 100_000), Ok(10_000));
        let too_many = F.count("1e12", 1, 100_000).unwrap_err();
        assert_eq!(too_many.field, Some("f"));
        assert_eq!(
            too_many.message,
            "values per site: 10¹² is too many: the most it takes is 100\u{202f}000"
        );
        assert!(F.count("0", 1, 10).unwrap_err().message.contains("the least it takes is 1"));
        assert!(F.count("-1", 1, 10).unwrap_err().message.contains("too few"));
        assert!(F.count("2.5", 1, 10).unwrap_err().message.contains("not a whole number"));
        for bad in ["NaN", "inf", "x", "1e308e", "0x10"] {
            assert!(F.count(bad, 1, 10).unwrap_err().message.contains("is not a number"), "{bad}");
        }
        assert!(F.count("", 1, 10).unwrap_err().message.contains("enter a whole number"));
        assert!(F.count("1e308", 1, 10).unwrap_err().message.contains("too many"));
        assert_eq!(F.optional_count("  ", 1, 10), Ok(None));
    }

    #[test]
    fn reals_refuse_what_is_not_a_finite_number_in_range() {
        let eps = Field::new("e", "ε");
        assert_eq!(eps.real(" 0.5 "), Ok(0.5));
        assert_eq!(eps.real("1e-5"), Ok(1e-5));
        assert!(eps.real("NaN").unwrap_err().message.contains("not a number"));
        assert!(eps.real("infinity").is_err());
        assert!(eps.real("1e400").unwrap_err().message.contains("too large"));
        assert!(eps.real("0,5").unwrap_err().message.contains("comma"));
        let small = eps.positive("1e-320", 1e-3, 100.0).unwrap_err().message;
        assert!(small.contains("too small") && small.contains("0.001"), "{small}");
        assert!(eps.positive("0", 1e-3, 100.0).unwrap_err().message.contains("more than 0"));
        let big = eps.positive("1e308", 1e-3, 100.0).unwrap_err().message;
        assert_eq!(big, "ε: 10³⁰⁸ is too large: the most it takes is 100");
        assert!(eps.real_in("2", 0.0, 1.0).unwrap_err().message.contains("from 0 to 1"));
    }
}
