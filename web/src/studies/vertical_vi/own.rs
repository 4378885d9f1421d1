/*!
A party's own CSV column block for the vertical study: a party tab loads its columns (a file, or
pasted text), rows aligned by position with the other party's. The dashboard announces what they
must be, in the task every tab checks: the schema (which columns each party holds, their public
bounds and category labels; CPS1988's, [`cps1988::schema`]) and the row count N. The text stays on
the tab until a run on own columns starts; then the party's worker reads it against its part of
the task's schema ([`own_block`], through the vertical-vi crate's `table::read_party`) and keeps
only the encoded block.

A file that does not fit (a wrong header, an unknown label, NaN, another row count than N) makes
the party decline the run before it sends anything but its refusal
([`Party::refusing`](capelab_vertical_vi::study::Party::refusing)): its own screen names the row,
column and value; what it tells the other members names the row and column but not the value
([`TableError::without_values`]).

[`preview`] checks a file as it is loaded, against the party whose columns its header holds, so a
mistake shows at once rather than at the start of a run, and the tab says which party it can be.

[`cps1988::schema`]: capelab_vertical_vi::cps1988::schema
*/

use capelab_vertical_vi::schema::{FeatureKind, PartyBlock, PartySchema, Schema};
use capelab_vertical_vi::table::{self, TableError};

use crate::numbers::{group, show};
use crate::studies::vertical_vi::view::{party_letter, people_label};

/// A party tab's own columns as loaded: kept on the tab, handed to its worker only when a run on
/// own columns starts.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnColumns {
    /// "file a.csv" or "pasted", for the panel.
    pub origin: String,
    pub text: String,
}

/// Why a party cannot use its own columns for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// For the party's own screen: the whole problem, values included, and the way out.
    pub here: String,
    /// For the other members (the reason of its decline): no value of the party's.
    pub told: String,
}

impl Refusal {
    /// A problem with nothing private in it: said the same here and to the others.
    pub fn public(reason: String) -> Self {
        Refusal { here: reason.clone(), told: reason }
    }
}

/// "education, experience, …": a party's columns as its file's header must name them.
pub fn column_list(schema: &PartySchema) -> String {
    schema.features.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// One column's public description: "region ∈ {northeast, midwest, south, west}", "experience ∈
/// {-5--1 (−5 to −1), …}" (how a file writes a label, and how it reads) or "wage from 50 to
/// 20 000 (log scale)".
pub fn column_rule(kind: &FeatureKind, name: &str) -> String {
    match kind {
        FeatureKind::Categorical { labels } => {
            let shown: Vec<String> = labels
                .iter()
                .map(|l| match people_label(l) {
                    read if read == *l => read,
                    read => format!("{l} ({read})"),
                })
                .collect();
            format!("{name} ∈ {{{}}}", shown.join(", "))
        }
        FeatureKind::Beta { lo, hi, log } => {
            format!(
                "{name} from {} to {}{}",
                show(*lo),
                show(*hi),
                if *log { " (log scale)" } else { "" }
            )
        }
    }
}

/// Party `party`'s block of `schema` from this tab's own `text`, which must hold the announced
/// `rows` rows. A file of another party's columns is named as such, with the way out.
pub fn own_block(
    schema: &Schema,
    party: usize,
    text: Option<&str>,
    rows: usize,
) -> Result<PartyBlock, Refusal> {
    let me = &schema.parties[party];
    let picked = format!("party {} ({})", party_letter(party), me.name);
    let Some(text) = text else {
        return Err(Refusal::public(format!(
            "{picked} has loaded no file of its own columns: load one ({}) under \"Vertical \
             study: your own columns\" on its tab, then start the run again",
            column_list(me)
        )));
    };
    let read = match table::read_party(me, text) {
        Ok(read) => read,
        Err(TableError::MissingColumn { .. })
            if let Ok(fits) = preview(schema, text)
                && fits.party != party =>
        {
            return Err(Refusal::public(format!(
                "the dashboard picked this tab as {picked}, but its file holds {}'s columns: \
                 pick this tab as party {} in the dashboard's form (or load {picked}'s columns, \
                 {}, here)",
                fits.name,
                party_letter(fits.party),
                column_list(me)
            )));
        }
        Err(e) => {
            return Err(Refusal {
                here: format!("{e}. Fix the file, load it again, and ask for a new run"),
                told: format!("its file does not fit the announced schema: {}", e.without_values()),
            });
        }
    };
    if read.block.rows != rows {
        let had = read.block.rows;
        return Err(Refusal::public(format!(
            "{picked}: its file has {} rows, the dashboard announced N = {} (rows are aligned by \
             position across the parties: load a file of {} rows, or start the run with the N \
             every party holds)",
            group(had),
            group(rows),
            group(rows)
        )));
    }
    Ok(read.block)
}

/// What a loaded file holds, checked against the announced schema (on the tab, for the user).
#[derive(Clone, Debug, PartialEq)]
pub struct Fits {
    pub party: usize,
    /// "party A (demographics)".
    pub name: String,
    pub rows: usize,
    /// Values outside the public bounds, clamped to them when read.
    pub clamped: usize,
}

/// Which party's columns `text` holds, read against that party's part of `schema`; the error
/// names the row, column and value (it stays on this tab).
pub fn preview(schema: &Schema, text: &str) -> Result<Fits, String> {
    let mut missing = Vec::new();
    for (p, party) in schema.parties.iter().enumerate() {
        let letter = party_letter(p);
        match table::read_party(party, text) {
            Ok(read) => {
                return Ok(Fits {
                    party: p,
                    name: format!("party {letter} ({})", party.name),
                    rows: read.block.rows,
                    clamped: read.clamps.iter().map(|c| c.total()).sum(),
                });
            }
            Err(TableError::MissingColumn { header, .. }) => {
                missing.push((
                    format!("party {letter} ({}): {}", party.name, column_list(party)),
                    header,
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let header = missing.first().map(|(_, h)| h.join(", ")).unwrap_or_default();
    let wanted: Vec<String> = missing.into_iter().map(|(w, _)| w).collect();
    Err(format!(
        "the header ({header}) holds no party's columns; the announced ones are {}",
        wanted.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use capelab_vertical_vi::cps1988;

    use super::*;

    const A: &str = "education,experience,ethnicity,smsa,region\n\
        12,10-14,cauc,yes,south\n\
        16,0-4,afam,no,west\n\
        7,40-44,cauc,yes,northeast\n";
    const B: &str = "wage,parttime\n354.94,no\n123.46,yes\n25,no\n";

    #[test]
    fn a_party_file_is_read_against_its_announced_columns_and_row_count() {
        let s = cps1988::schema();
        let a = own_block(&s, 0, Some(A), 3).unwrap();
        assert_eq!((a.rows, a.features), (3, 5));
        let e = own_block(&s, 1, Some(B), 4).unwrap_err();
        assert_eq!(e.here, e.told, "a row count is no private value");
        assert!(e.here.contains("has 3 rows, the dashboard announced N = 4"), "{}", e.here);
        let e = own_block(&s, 0, None, 3).unwrap_err();
        assert!(e.told.contains("loaded no file") && e.told.contains("education, experience"));
    }

    #[test]
    fn another_party_s_file_is_named_with_the_way_out() {
        let s = cps1988::schema();
        let e = own_block(&s, 0, Some(B), 3).unwrap_err();
        assert_eq!(e.here, e.told, "which columns a file holds is public (the schema)");
        assert!(
            e.here.starts_with(
                "the dashboard picked this tab as party A (demographics), but its file holds \
                 party B (financial)'s columns: pick this tab as party B"
            ),
            "{}",
            e.here
        );
    }

    #[test]
    fn a_bad_value_is_named_here_and_withheld_from_the_others() {
        let s = cps1988::schema();
        let bad = A.replace("afam,no,west", "martian,no,west");
        let e = own_block(&s, 0, Some(&bad), 3).unwrap_err();
        // rows counted from 1 as people count them: the second data row, on line 3
        let at = "'ethnicity', row 2 (line 3 of the file)";
        assert!(e.here.contains(at) && e.here.contains("'martian'"), "{}", e.here);
        assert!(e.here.contains("load it again"), "the way out: {}", e.here);
        assert!(e.told.contains(at) && !e.told.contains("martian"), "{}", e.told);
        let nan = B.replace("123.46", "NaN");
        let e = own_block(&s, 1, Some(&nan), 3).unwrap_err();
        assert!(e.here.contains("'wage', row 2") && e.here.contains("'NaN'"), "{}", e.here);
        assert!(!e.told.contains("NaN"), "{}", e.told);
    }

    #[test]
    fn the_preview_finds_the_party_whose_columns_the_header_holds() {
        let s = cps1988::schema();
        let fits = preview(&s, B).unwrap();
        assert_eq!((fits.party, fits.name.as_str(), fits.rows), (1, "party B (financial)", 3));
        assert_eq!(fits.clamped, 1, "a wage of 25 is below the public 50");
        assert_eq!(preview(&s, A).unwrap().party, 0);
        let e = preview(&s, "age,income\n3,4\n").unwrap_err();
        assert!(
            e.contains("header (age, income)") && e.contains("party B (financial): wage, parttime"),
            "{e}"
        );
        let e = preview(&s, &A.replace("16,0-4", "16,3")).unwrap_err();
        assert!(e.contains("'experience', row 2") && e.contains("'3'"), "{e}");
        let wage = column_rule(&s.parties[1].features[0].kind, "wage");
        assert_eq!(wage, "wage from 50 to 20\u{202f}000 (log scale)");
        let experience = column_rule(&s.parties[0].features[1].kind, "experience");
        assert!(
            experience.starts_with("experience ∈ {-5--1 (−5 to −1), 0-4 (0 to 4),"),
            "{experience}"
        );
    }
}
