/*!
Reading a party's columns against the public [`Schema`] (spec B1, B2, D8), the fixed train/test
split, and mapping encoded cells back to the original scale (the synthetic twin, spec B6).

**Input.** Each party holds a CSV of its own columns: `#` comment lines and blank lines are
skipped (as in capelab-core's `data::table` and the files `scripts/fetch_datasets.py` writes), then
a header row, then one row per individual. Rows are aligned **by position** across parties (record
linkage is out of scope, spec B1). Columns are looked up by name, so a file may hold more columns
than the party's schema lists (the joined `data/cps1988.csv`, for instance); extra columns are
ignored. Fields are separated by commas; quoting is not supported.

**Encoding.**
- A `Beta { lo, hi, log }` column: a value x below `lo` or above `hi` (the **public** bounds) is
  clamped to the bound and **counted** ([`ClampReport`]); then v = x (or ln x when `log`) is
  rescaled to u = (v − v_lo)/(v_hi − v_lo) and clamped into [`UNIT_CLAMP`], 1 − `UNIT_CLAMP`] (at 0
  and 1 the Beta log-density is infinite, spec D8). Values at the bounds themselves are not
  counted. With `log`, x ≤ 0 is below any positive `lo` and is clamped and counted, never passed to
  ln. NaN, ±∞ and unparsable text are errors: there is no public rule to impute them.
- A `Categorical { labels }` column: the field (trimmed) must equal one of the public labels; its
  index is the cell. Anything else is an error naming the column, row and value.

**Split.** [`train_test_split`] draws one permutation of 0..N from a public seed and N only
(ChaCha20 keyed by SHA-256 of the seed and a label that contains N, capelab-core's
`rng::derive`, then Fisher–Yates with unbiased rejection sampling), so every party computes the
same split without talking; it reveals nothing about the data.
*/

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::schema::{Cell, FeatureKind, PartyBlock, PartySchema, Schema, UNIT_CLAMP};

/// Why a party's CSV could not be read against its schema. Every variant names the party and, where
/// there is one, the column, the data row, the file line and the offending text. `row` is 0-based
/// (header and comments not counted); messages count rows from 1 as people do ("row 1 (line 2 of
/// the file)" is the first data row under a header on line 1).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TableError {
    #[error("party '{party}': the CSV has no header row (every line is blank or a # comment)")]
    NoHeader { party: String },
    #[error("party '{party}': the CSV has a header but no data rows")]
    NoRows { party: String },
    #[error("party '{party}': column '{column}' appears twice in the header")]
    DuplicateColumn { party: String, column: String },
    #[error("party '{party}': no column '{column}' in the header {header:?}")]
    MissingColumn { party: String, column: String, header: Vec<String> },
    #[error(
        "party '{party}', row {} (line {line} of the file): {got} fields, the header has \
         {expected}",
        .row + 1
    )]
    Ragged { party: String, row: usize, line: usize, expected: usize, got: usize },
    #[error(
        "party '{party}', column '{column}', row {} (line {line} of the file): '{value}' is not a \
         finite number",
        .row + 1
    )]
    NotANumber { party: String, column: String, row: usize, line: usize, value: String },
    #[error(
        "party '{party}', column '{column}', row {} (line {line} of the file): unknown category \
         '{value}'; the public labels are {}",
        .row + 1,
        labels.join(", ")
    )]
    UnknownCategory {
        party: String,
        column: String,
        row: usize,
        line: usize,
        value: String,
        labels: Vec<String>,
    },
    #[error("the schema has {schema} parties but {given} CSV texts were given")]
    PartyCount { schema: usize, given: usize },
    #[error("parties have different row counts (rows are aligned by position): {counts:?}")]
    RowCounts { counts: Vec<(String, usize)> },
    #[error("column '{column}': the public bounds [{lo}, {hi}] are not a valid interval{why}")]
    Bounds { column: String, lo: f64, hi: f64, why: &'static str },
}

impl TableError {
    /// The error as a party may tell the other members of a run: the same problem, party, column
    /// and row, without the offending text (a party's values never leave its tab; its own
    /// screen shows the whole error).
    pub fn without_values(&self) -> String {
        match self {
            TableError::NotANumber { party, column, row, line, .. } => format!(
                "party '{party}', column '{column}', row {} (line {line} of the file): not a \
                 finite number (the value stays with the party)",
                row + 1
            ),
            TableError::UnknownCategory { party, column, row, line, .. } => format!(
                "party '{party}', column '{column}', row {} (line {line} of the file): not one \
                 of the column's public labels (the value stays with the party)",
                row + 1
            ),
            other => other.to_string(),
        }
    }
}

/// How many values of one Beta column fell outside its public bounds and were clamped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClampReport {
    pub column: String,
    /// Values below `lo` (including x ≤ 0 for a `log` column).
    pub below: usize,
    /// Values above `hi`.
    pub above: usize,
}

impl ClampReport {
    pub fn total(&self) -> usize {
        self.below + self.above
    }
}

/// One party's encoded columns and, per Beta column in schema order, its clamp counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartyTable {
    pub party: String,
    pub block: PartyBlock,
    pub clamps: Vec<ClampReport>,
}

/// The outcome of encoding one Beta value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clamped {
    No,
    Below,
    Above,
}

/// Encodes x for `Beta { lo, hi, log }`: clamped to [lo, hi] (reported), rescaled (after ln when
/// `log`) and clamped into [UNIT_CLAMP, 1 − UNIT_CLAMP]. `x` must be finite.
pub fn encode_unit(lo: f64, hi: f64, log: bool, x: f64) -> (f64, Clamped) {
    let (x, clamped) = if x < lo {
        (lo, Clamped::Below)
    } else if x > hi {
        (hi, Clamped::Above)
    } else {
        (x, Clamped::No)
    };
    let (v, vlo, vhi) = if log { (x.ln(), lo.ln(), hi.ln()) } else { (x, lo, hi) };
    let u = (v - vlo) / (vhi - vlo);
    (u.clamp(UNIT_CLAMP, 1.0 - UNIT_CLAMP), clamped)
}

/// The inverse of [`encode_unit`] on [0, 1]: u ↦ lo + u(hi − lo), or exp of that on the log scale.
pub fn decode_unit(lo: f64, hi: f64, log: bool, u: f64) -> f64 {
    if log { (lo.ln() + u * (hi.ln() - lo.ln())).exp() } else { lo + u * (hi - lo) }
}

/// A cell mapped back to the original scale: a number for a Beta column, a label for a categorical
/// one (for a binned column, the bin's label).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    Number(f64),
    Label(String),
}

/// Maps an encoded cell back through its feature's public description (spec B6). `None` when the
/// cell does not fit the kind (a category index for a Beta column, an index past the labels).
pub fn decode_cell(kind: &FeatureKind, cell: Cell) -> Option<Value> {
    match (kind, cell) {
        (FeatureKind::Beta { lo, hi, log }, Cell::Unit(u)) => {
            Some(Value::Number(decode_unit(*lo, *hi, *log, u)))
        }
        (FeatureKind::Categorical { labels }, Cell::Category(i)) => {
            labels.get(i as usize).map(|l| Value::Label(l.clone()))
        }
        _ => None,
    }
}

/// A decoded block as CSV text (header of the party's column names, then one row per record):
/// what a party publishes of its share of a synthetic twin. Numbers are written round-trip exact.
pub fn decode_block_csv(schema: &PartySchema, block: &PartyBlock) -> String {
    let mut out = String::new();
    let names: Vec<&str> = schema.features.iter().map(|f| f.name.as_str()).collect();
    out.push_str(&names.join(","));
    out.push('\n');
    for n in 0..block.rows {
        let fields: Vec<String> = schema
            .features
            .iter()
            .zip(block.row(n))
            .map(|(f, c)| match decode_cell(&f.kind, *c) {
                Some(Value::Number(x)) => format!("{x:?}"),
                Some(Value::Label(l)) => l,
                None => String::from("?"),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

fn check_bounds(schema: &PartySchema) -> Result<(), TableError> {
    for f in &schema.features {
        if let FeatureKind::Beta { lo, hi, log } = f.kind {
            let why = if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                Some(" (need finite lo < hi)")
            } else if log && lo <= 0.0 {
                Some(" (a log column needs lo > 0)")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(TableError::Bounds { column: f.name.clone(), lo, hi, why });
            }
        }
    }
    Ok(())
}

/// Reads one party's CSV text against its part of the schema.
pub fn read_party(schema: &PartySchema, csv: &str) -> Result<PartyTable, TableError> {
    check_bounds(schema)?;
    let party = schema.name.clone();
    let mut lines = csv
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (_, header) = lines.next().ok_or_else(|| TableError::NoHeader { party: party.clone() })?;
    let header: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
    for (i, c) in header.iter().enumerate() {
        if header[..i].contains(c) {
            return Err(TableError::DuplicateColumn { party, column: c.clone() });
        }
    }
    let positions = schema
        .features
        .iter()
        .map(|f| {
            header.iter().position(|h| *h == f.name).ok_or_else(|| TableError::MissingColumn {
                party: party.clone(),
                column: f.name.clone(),
                header: header.clone(),
            })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let mut clamps: Vec<ClampReport> = schema
        .features
        .iter()
        .filter(|f| matches!(f.kind, FeatureKind::Beta { .. }))
        .map(|f| ClampReport { column: f.name.clone(), below: 0, above: 0 })
        .collect();
    let width = schema.features.len();
    let mut cells = Vec::new();
    let mut rows = 0;
    for (line, text) in lines {
        let row = rows;
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != header.len() {
            return Err(TableError::Ragged {
                party,
                row,
                line,
                expected: header.len(),
                got: fields.len(),
            });
        }
        let mut beta = 0;
        for (f, &at) in schema.features.iter().zip(&positions) {
            let field = fields[at];
            match &f.kind {
                FeatureKind::Beta { lo, hi, log } => {
                    let x = match field.parse::<f64>() {
                        Ok(x) if x.is_finite() => x,
                        _ => {
                            return Err(TableError::NotANumber {
                                party,
                                column: f.name.clone(),
                                row,
                                line,
                                value: field.to_string(),
                            });
                        }
                    };
                    let (u, c) = encode_unit(*lo, *hi, *log, x);
                    match c {
                        Clamped::No => {}
                        Clamped::Below => clamps[beta].below += 1,
                        Clamped::Above => clamps[beta].above += 1,
                    }
                    beta += 1;
                    cells.push(Cell::Unit(u));
                }
                FeatureKind::Categorical { labels } => {
                    let Some(i) = labels.iter().position(|l| l == field) else {
                        return Err(TableError::UnknownCategory {
                            party,
                            column: f.name.clone(),
                            row,
                            line,
                            value: field.to_string(),
                            labels: labels.clone(),
                        });
                    };
                    cells.push(Cell::Category(i as u32));
                }
            }
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(TableError::NoRows { party });
    }
    Ok(PartyTable { party, block: PartyBlock { rows, features: width, cells }, clamps })
}

/// Reads every party's CSV (one text per party, in schema order) and checks that they have the same
/// number of rows.
pub fn read_parties(schema: &Schema, csvs: &[&str]) -> Result<Vec<PartyTable>, TableError> {
    if csvs.len() != schema.parties.len() {
        return Err(TableError::PartyCount { schema: schema.parties.len(), given: csvs.len() });
    }
    let tables = schema
        .parties
        .iter()
        .zip(csvs)
        .map(|(p, csv)| read_party(p, csv))
        .collect::<Result<Vec<_>, _>>()?;
    if tables.iter().any(|t| t.block.rows != tables[0].block.rows) {
        return Err(TableError::RowCounts {
            counts: tables.iter().map(|t| (t.party.clone(), t.block.rows)).collect(),
        });
    }
    Ok(tables)
}

/// The rows `indices` of `block`, in that order.
pub fn select_rows(block: &PartyBlock, indices: &[usize]) -> PartyBlock {
    let mut cells = Vec::with_capacity(indices.len() * block.features);
    for &n in indices {
        cells.extend_from_slice(block.row(n));
    }
    PartyBlock { rows: indices.len(), features: block.features, cells }
}

/// A train/test split of 0..N: disjoint, together all of 0..N, each in permuted order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// A uniformly random permutation of 0..n from the public `seed` and n only (see the module doc).
pub fn public_permutation(seed: u64, n: usize) -> Vec<usize> {
    let mut rng = capelab_core::rng::derive(seed, &format!("vertical-vi/split/n={n}"));
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        // j uniform in 0..=i by rejection: no modulo bias.
        let bound = i as u64 + 1;
        let zone = u64::MAX - (u64::MAX % bound);
        let j = loop {
            let r = rng.next_u64();
            if r < zone {
                break (r % bound) as usize;
            }
        };
        perm.swap(i, j);
    }
    perm
}

/// The fixed split of n rows: the first round(n · test_fraction) entries of
/// [`public_permutation`]`(seed, n)` are the test rows, the rest the training rows.
pub fn train_test_split(seed: u64, n: usize, test_fraction: f64) -> Split {
    let test_rows = ((n as f64) * test_fraction.clamp(0.0, 1.0)).round() as usize;
    let mut perm = public_permutation(seed, n);
    let train = perm.split_off(test_rows);
    Split { train, test: perm }
}
