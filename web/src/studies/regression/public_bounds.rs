/*!
Public bounds for the regression study: the dashboard types them, announces them with the study
(they are public), and each site maps its raw CSV into FM's domain with them (spec cape-fm §2.4,
§7.9; issue 6 "Normalisation uses public bounds supplied by the user").

The map is the core's [`Normaliser::PublicBounds`] (features from [lo, hi] onto [−1, 1], records
divided by √D, the target onto [−1, 1]); this module only reads the bounds, carries them on the
wire ([`BoundsAnnouncement`]) and counts the values the map clamps. The count is shown at the site
and never sent: how many of a site's values lie outside public bounds is a fact about its data.

Data-dependent scaling is deliberately not offered in the browser: its scales are functions of
every record, so the release would not be private with respect to the raw data (spec §7.9).

Bounds text: one `lo, hi` per line (separators as in a CSV; an optional `name:` before them and
`#` comments are ignored). A single line applies to every feature and, for linear regression, to
the target; otherwise there is one line per feature and, for linear regression, one more for the
target. Logistic labels must already be 0 or 1 and take no bounds.
*/

use capelab_core::codec::{self, DecodeError};
use capelab_core::data::{Bounds, Dataset, Normaliser, TargetKind};
use capelab_core::fm::Model;
use capelab_core::study::StudyId;
use capelab_core::study::mean::{Query, StudyParams};
use serde::{Deserialize, Serialize};

use crate::local_data::DataSource;

/// The envelope kind of a bounds announcement (dashboard → every site, just before the study).
pub const KIND: &str = "regression/bounds";

/// The default of the dashboard's field: already-normalised data, every column in [0, 1].
pub const DEFAULT_BOUNDS_TEXT: &str = "0, 1";

/// The public bounds of one regression study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundsAnnouncement {
    pub study: StudyId,
    pub bounds: Bounds,
}

impl BoundsAnnouncement {
    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        codec::decode(KIND, bytes)
    }
}

/// Why the bounds field cannot be read. Lines count from 1.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BoundsError {
    #[error("public bounds: line {line}: “{text}” is not “lo, hi” (two numbers)")]
    NotAPair { line: usize, text: String },
    #[error("public bounds: line {line}: [{lo}, {hi}] is not an interval with lo < hi")]
    Empty { line: usize, lo: f64, hi: f64 },
    #[error(
        "public bounds: {got} line(s) for D = {features} features: give one line for all, or \
         {expected} ({what})"
    )]
    Count { features: usize, got: usize, expected: usize, what: &'static str },
}

/// Reads the bounds field for D = `features` features of `model`. Empty text is the default
/// ([`DEFAULT_BOUNDS_TEXT`]).
pub fn parse_bounds(text: &str, features: usize, model: Model) -> Result<Bounds, BoundsError> {
    let text = if text.trim().is_empty() { DEFAULT_BOUNDS_TEXT } else { text };
    let mut pairs = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        // "age: 19, 79" names the column for the reader; the name is not used.
        let numbers = content.rsplit(':').next().unwrap_or(content);
        let cells: Vec<&str> = numbers
            .split([',', ';', '\t', ' ', '[', ']'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let parsed: Option<Vec<f64>> = cells.iter().map(|c| c.parse::<f64>().ok()).collect();
        let (lo, hi) = match parsed.as_deref() {
            Some(&[lo, hi]) => (lo, hi),
            _ => return Err(BoundsError::NotAPair { line, text: content.to_owned() }),
        };
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(BoundsError::Empty { line, lo, hi });
        }
        pairs.push((lo, hi));
    }
    let with_target = model == Model::Linear;
    match pairs.len() {
        1 => Ok(Bounds {
            features: vec![pairs[0]; features],
            target: with_target.then_some(pairs[0]),
        }),
        n if n == features + usize::from(with_target) => {
            let target = with_target.then(|| pairs[features]);
            pairs.truncate(features);
            Ok(Bounds { features: pairs, target })
        }
        got => Err(BoundsError::Count {
            features,
            got,
            expected: features + usize::from(with_target),
            what: if with_target { "one per feature, then the target" } else { "one per feature" },
        }),
    }
}

/// A site's records mapped into FM's domain, and how many raw values the map clamped.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// Each record's D normalised features followed by its label.
    pub records: Vec<Vec<f64>>,
    /// Values (features and target) outside their public bounds, clamped. Private: never sent.
    pub clamped: usize,
}

/// Why a site's table cannot be mapped with the announced bounds: nothing is released then.
/// Rows count from 1, as the table's data rows; columns from 1.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PrepareError {
    #[error(
        "row {row} has {got} column(s), the study needs {expected}: D = {features} features, then \
         the target in the last column"
    )]
    Width { row: usize, got: usize, expected: usize, features: usize },
    #[error("row {row}, column {column}: {value} is not a finite number")]
    NotFinite { row: usize, column: usize, value: f64 },
    #[error("row {row}: label {value} is not 0 or 1 (logistic regression needs 0/1 classes)")]
    NotBinary { row: usize, value: f64 },
    #[error("no rows: load a CSV with N_s rows")]
    Empty,
    #[error("{0}")]
    Normalise(String),
}

/// Maps raw `rows` (D features, then the target) into FM's domain with the public `bounds`,
/// through the core's [`Normaliser::PublicBounds`], counting clamped values.
pub fn prepare_records(
    rows: &[Vec<f64>],
    features: usize,
    model: Model,
    bounds: &Bounds,
) -> Result<Prepared, PrepareError> {
    if rows.is_empty() {
        return Err(PrepareError::Empty);
    }
    let expected = features + 1;
    for (i, row) in rows.iter().enumerate() {
        if row.len() != expected {
            return Err(PrepareError::Width { row: i + 1, got: row.len(), expected, features });
        }
        if let Some((j, &value)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(PrepareError::NotFinite { row: i + 1, column: j + 1, value });
        }
    }
    let kind = match model {
        Model::Linear => TargetKind::Regression,
        Model::Logistic => TargetKind::Binary,
    };
    let x: Vec<Vec<f64>> = rows.iter().map(|r| r[..features].to_vec()).collect();
    let y: Vec<f64> = rows.iter().map(|r| r[features]).collect();
    let raw = Dataset::from_rows(&x, &y).map_err(|e| PrepareError::Normalise(e.to_string()))?;
    let fitted = Normaliser::PublicBounds(bounds.clone())
        .fit(&raw, kind)
        .map_err(|e| PrepareError::Normalise(e.to_string()))?;
    let mapped = fitted.apply(&raw).map_err(|e| match e {
        capelab_core::data::NormaliseError::NotBinary { row, value } => {
            PrepareError::NotBinary { row: row + 1, value }
        }
        other => PrepareError::Normalise(other.to_string()),
    })?;
    let outside = |v: f64, (lo, hi): (f64, f64)| v < lo || v > hi;
    let clamped =
        rows.iter()
            .map(|r| {
                let in_features =
                    r[..features].iter().zip(&bounds.features).filter(|(v, b)| outside(**v, **b));
                let in_target =
                    usize::from(bounds.target.is_some_and(|b| {
                        kind == TargetKind::Regression && outside(r[features], b)
                    }));
                in_features.count() + in_target
            })
            .sum();
    let records = (0..mapped.len())
        .map(|i| {
            let mut r: Vec<f64> = mapped.x.row(i).iter().copied().collect();
            r.push(mapped.y[i]);
            r
        })
        .collect();
    Ok(Prepared { records, clamped })
}

/// What the site's Local data panel says about the records of the current regression study.
#[derive(Clone, Debug, PartialEq)]
pub enum PreparedNote {
    /// Mapped with the public bounds; this many raw values were clamped.
    Mapped { clamped: usize, records: usize },
    /// The table does not fit the study: nothing of it is released (the site declines).
    Refused(String),
}

/// The rows a site gives the study `params`: a table in a regression is mapped with the announced
/// public `bounds` ([`prepare_records`]); seeded records are generated inside FM's domain and any
/// other study takes the rows as they are. When the table cannot be mapped, no rows are given,
/// so the core declines the study and nothing of the table leaves the tab.
pub fn site_rows(
    source: &DataSource,
    params: &StudyParams,
    bounds: Option<&Bounds>,
) -> (Vec<Vec<f64>>, Option<PreparedNote>) {
    let (Query::Regression(q), DataSource::Table { table, .. }) = (params.query, source) else {
        return (source.rows_for_study(params), None);
    };
    let Some(bounds) = bounds else {
        let why = "the dashboard announced no public bounds for this study".to_owned();
        return (Vec::new(), Some(PreparedNote::Refused(why)));
    };
    match prepare_records(&table.rows, params.dimension, q.model, bounds) {
        Ok(p) => {
            let note = PreparedNote::Mapped { clamped: p.clamped, records: p.records.len() };
            (p.records, Some(note))
        }
        Err(e) => (Vec::new(), Some(PreparedNote::Refused(e.to_string()))),
    }
}

/// Whether the site's table fits the study `params` as it would join it: the rows [`site_rows`]
/// gives, checked by the core's own [`Query::check_rows`] (what makes a site decline). `None` for
/// generated data, which is made to fit. Shown when a table is loaded after a study was announced,
/// so a wrong file is named in its own tab before the next round, not found by declining it.
pub fn table_fit(
    source: &DataSource,
    params: &StudyParams,
    bounds: Option<&Bounds>,
) -> Option<Result<String, String>> {
    let DataSource::Table { .. } = source else { return None };
    let (rows, note) = site_rows(source, params, bounds);
    if let Some(PreparedNote::Refused(why)) = note {
        return Some(Err(why));
    }
    let shape = format!("{} rows × {} values", params.values_per_site, params.dimension);
    Some(match params.query.check_rows(&rows, params.values_per_site, params.dimension) {
        Ok(()) => Ok(format!("This table fits the last announced study ({shape} per site).")),
        Err(e) => Err(format!(
            "This table does not fit the last announced study ({shape} per site): {e}. This site \
             declines such a study, sending nothing; load a table that fits, or use a seed."
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capelab_core::study::regression::check_records;

    #[test]
    fn a_table_is_checked_against_the_announced_study_as_the_core_checks_it() {
        use crate::local_data::{DataSource, parse_table};
        let params = StudyParams::new(vec![1, 2, 3], 0.5, 1e-5, 3).unwrap();
        let table = |text: &str| DataSource::Table {
            origin: "typed".into(),
            table: parse_table(text).unwrap(),
        };
        assert_eq!(table_fit(&DataSource::Seeded { seed: 1 }, &params, None), None);
        let fits = table_fit(&table("0.1\n0.2\n0.3"), &params, None).unwrap().unwrap();
        assert!(fits.contains("3 rows × 1 values"), "{fits}");
        let short = table_fit(&table("0.1\n0.2"), &params, None).unwrap().unwrap_err();
        assert!(short.contains("the site holds 2 rows, the study asks for N_s = 3"), "{short}");
        let wide = table_fit(&table("0.1, 0.2\n0.2, 0.3\n0.3, 0.4"), &params, None);
        assert!(wide.unwrap().unwrap_err().contains("row 0 has 2 values"));
        // a regression's table without announced bounds is refused as the site would refuse it
        let query = capelab_core::study::regression::RegressionQuery {
            model: Model::Linear,
            release_constant: false,
        };
        let regression = params.with_query(Query::Regression(query)).unwrap();
        let why = table_fit(&table("0.1, 0.5\n0.2, 0.5\n0.3, 0.5"), &regression, None);
        assert!(why.unwrap().unwrap_err().contains("no public bounds"));
    }

    #[test]
    fn one_line_for_all_or_one_per_column() {
        let b = parse_bounds("", 3, Model::Linear).unwrap();
        assert_eq!(b.features, vec![(0.0, 1.0); 3]);
        assert_eq!(b.target, Some((0.0, 1.0)));
        let b = parse_bounds("age: 19, 79\nbmi: [18 42] # kg/m²\n\ny: -1, 300\n", 2, Model::Linear)
            .unwrap();
        assert_eq!(b.features, vec![(19.0, 79.0), (18.0, 42.0)]);
        assert_eq!(b.target, Some((-1.0, 300.0)));
        let b = parse_bounds("0 10\n-5 5", 2, Model::Logistic).unwrap();
        assert_eq!((b.features, b.target), (vec![(0.0, 10.0), (-5.0, 5.0)], None));
    }

    #[test]
    fn bad_bounds_are_named() {
        assert_eq!(
            parse_bounds("0, 1\nzero, 2", 2, Model::Logistic),
            Err(BoundsError::NotAPair { line: 2, text: "zero, 2".into() })
        );
        assert_eq!(
            parse_bounds("3, 1", 2, Model::Linear),
            Err(BoundsError::Empty { line: 1, lo: 3.0, hi: 1.0 })
        );
        let e = parse_bounds("0,1\n0,1", 2, Model::Linear).unwrap_err();
        assert!(matches!(e, BoundsError::Count { got: 2, expected: 3, .. }), "{e}");
        assert!(e.to_string().contains("then the target"), "{e}");
    }

    #[test]
    fn raw_rows_land_in_fms_domain_and_clamps_are_counted() {
        // D = 2 raw features on [0, 100] and [−10, 10], target on [0, 50]
        let bounds =
            Bounds { features: vec![(0.0, 100.0), (-10.0, 10.0)], target: Some((0.0, 50.0)) };
        let rows = vec![
            vec![50.0, 0.0, 25.0],
            vec![100.0, 10.0, 50.0],
            vec![150.0, -20.0, 60.0], // three values outside: clamped
            vec![0.0, -10.0, 0.0],
        ];
        let p = prepare_records(&rows, 2, Model::Linear, &bounds).unwrap();
        assert_eq!(p.clamped, 3);
        check_records(Model::Linear, &p.records, 4, 2).unwrap();
        // independent arithmetic: ((v − centre)·2/(hi − lo))/√D
        let s = std::f64::consts::SQRT_2;
        let expect = [[0.0, 0.0, 0.0], [1.0 / s, 1.0 / s, 1.0], [1.0 / s, -1.0 / s, 1.0]];
        for (got, want) in p.records.iter().zip(&expect) {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
            }
        }
        assert!((p.records[3][0] + 1.0 / s).abs() < 1e-12 && p.records[3][2] == -1.0);
    }

    #[test]
    fn tables_that_do_not_fit_name_the_row_and_column() {
        let bounds = parse_bounds("", 2, Model::Linear).unwrap();
        let e = prepare_records(&[vec![0.1, 0.2, 0.3], vec![0.1, 0.2]], 2, Model::Linear, &bounds)
            .unwrap_err();
        assert_eq!(e, PrepareError::Width { row: 2, got: 2, expected: 3, features: 2 });
        assert!(e.to_string().contains("target in the last column"), "{e}");
        let e = prepare_records(&[vec![0.1, f64::NAN, 0.3]], 2, Model::Linear, &bounds);
        assert!(matches!(e, Err(PrepareError::NotFinite { row: 1, column: 2, .. })));
        let logistic = parse_bounds("", 2, Model::Logistic).unwrap();
        let e = prepare_records(
            &[vec![0.1, 0.2, 1.0], vec![0.1, 0.2, 0.5]],
            2,
            Model::Logistic,
            &logistic,
        );
        assert_eq!(e, Err(PrepareError::NotBinary { row: 2, value: 0.5 }));
        assert_eq!(prepare_records(&[], 2, Model::Linear, &bounds), Err(PrepareError::Empty));
    }

    #[test]
    fn a_site_maps_its_table_only_in_a_regression_with_bounds() {
        use crate::local_data::parse_raw_table;
        use capelab_core::study::regression::RegressionQuery;
        let params = StudyParams::new(vec![1, 2], 0.5, 1e-5, 3)
            .unwrap()
            .with_query(Query::Regression(RegressionQuery::new(Model::Linear)))
            .unwrap()
            .with_dimension(2)
            .unwrap();
        let table = parse_raw_table("a,b,y\n10,20,5\n0,40,0\n99,30,10\n").unwrap();
        let source = DataSource::Table { origin: "file raw.csv".into(), table };
        let bounds = parse_bounds("0,50\n0,40\n0,10", 2, Model::Linear).unwrap();
        let (rows, note) = site_rows(&source, &params, Some(&bounds));
        assert_eq!(note, Some(PreparedNote::Mapped { clamped: 1, records: 3 }));
        check_records(Model::Linear, &rows, 3, 2).unwrap();
        let (rows, note) = site_rows(&source, &params, None);
        assert!(rows.is_empty() && matches!(note, Some(PreparedNote::Refused(_))));
        // D = 3 asked of a table with 2 features and the target: refused, naming the row
        let wide = params.clone().with_dimension(3).unwrap();
        let bounds3 = parse_bounds("", 3, Model::Linear).unwrap();
        let (rows, note) = site_rows(&source, &wide, Some(&bounds3));
        assert!(rows.is_empty());
        assert!(
            matches!(&note, Some(PreparedNote::Refused(m)) if m.starts_with("row 1 has 3 column(s)")),
            "{note:?}"
        );
        // seeded records are generated in the domain: bounds are not applied to them
        let seeded = DataSource::Seeded { seed: 5 };
        let (rows, note) = site_rows(&seeded, &params, Some(&bounds));
        assert_eq!((rows, note), (seeded.rows_for_study(&params), None));
    }

    #[test]
    fn the_announcement_round_trips() {
        let a = BoundsAnnouncement {
            study: StudyId([7; 16]),
            bounds: parse_bounds("0,2\n1,3\n-1,1", 2, Model::Linear).unwrap(),
        };
        assert_eq!(BoundsAnnouncement::decode(&a.encode()), Ok(a));
    }
}
