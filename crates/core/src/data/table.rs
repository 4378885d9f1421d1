/*!
A numeric CSV table: one header row of column names, then one row of numbers per record.

Lines starting with `#` are comments (the data sets written by `scripts/fetch_datasets.py` carry
their source and licence there) and blank lines are skipped. Fields are separated by commas;
quoting is not supported because every field must be a number anyway.
*/

use serde::{Deserialize, Serialize};

/// Why a CSV text could not be read as a numeric table.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TableError {
    #[error("the CSV has no header row (every line is blank or a # comment)")]
    NoHeader,
    #[error("the CSV has a header but no data rows")]
    NoRows,
    #[error("line {line}: {got} fields, the header has {expected}")]
    Ragged { line: usize, expected: usize, got: usize },
    #[error("line {line}, column '{column}': '{text}' is not a finite number")]
    NotANumber { line: usize, column: String, text: String },
    #[error("column '{0}' appears twice in the header")]
    DuplicateColumn(String),
    #[error("no column named '{name}'; the columns are {columns:?}")]
    NoSuchColumn { name: String, columns: Vec<String> },
}

/// A table split into feature rows and a target column.
#[derive(Clone, Debug, PartialEq)]
pub struct FeaturesAndTarget {
    /// One row per record, every column but the target, in order.
    pub features: Vec<Vec<f64>>,
    pub feature_names: Vec<String>,
    pub target: Vec<f64>,
}

/// Column names and rows of numbers, all rows as long as the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

/// Parses `text` as a numeric CSV with a header row.
pub fn parse_csv(text: &str) -> Result<Table, TableError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (_, header) = lines.next().ok_or(TableError::NoHeader)?;
    let columns: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(TableError::DuplicateColumn(c.clone()));
        }
    }
    let mut rows = Vec::new();
    for (line, text) in lines {
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != columns.len() {
            return Err(TableError::Ragged { line, expected: columns.len(), got: fields.len() });
        }
        let row = fields
            .iter()
            .zip(&columns)
            .map(|(f, c)| match f.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(TableError::NotANumber { line, column: c.clone(), text: f.to_string() }),
            })
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(TableError::NoRows);
    }
    Ok(Table { columns, rows })
}

impl Table {
    /// The index of column `name`.
    pub fn column_index(&self, name: &str) -> Result<usize, TableError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| TableError::NoSuchColumn {
            name: name.to_string(),
            columns: self.columns.clone(),
        })
    }

    /// Splits the table into feature rows (every column but `target`, in order) and the target.
    pub fn features_and_target(&self, target: &str) -> Result<FeaturesAndTarget, TableError> {
        let t = self.column_index(target)?;
        let names = self.columns.iter().enumerate().filter(|(i, _)| *i != t);
        let feature_names = names.map(|(_, c)| c.clone()).collect();
        let features = self
            .rows
            .iter()
            .map(|r| r.iter().enumerate().filter(|(i, _)| *i != t).map(|(_, v)| *v).collect())
            .collect();
        let target = self.rows.iter().map(|r| r[t]).collect();
        Ok(FeaturesAndTarget { features, feature_names, target })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_header_and_rows() {
        let t = parse_csv("# source: test\n\na, b,target\n1,2.5,-3\n# mid\n4,5e-1,6\n").unwrap();
        assert_eq!(t.columns, ["a", "b", "target"]);
        assert_eq!(t.rows, vec![vec![1.0, 2.5, -3.0], vec![4.0, 0.5, 6.0]]);
        let split = t.features_and_target("a").unwrap();
        assert_eq!(split.feature_names, ["b", "target"]);
        assert_eq!(split.features, vec![vec![2.5, -3.0], vec![0.5, 6.0]]);
        assert_eq!(split.target, vec![1.0, 4.0]);
    }

    #[test]
    fn refuses_malformed_tables_naming_the_place() {
        assert_eq!(parse_csv("# only\n"), Err(TableError::NoHeader));
        assert_eq!(parse_csv("a,b\n"), Err(TableError::NoRows));
        assert_eq!(
            parse_csv("a,b\n1,2\n3\n"),
            Err(TableError::Ragged { line: 3, expected: 2, got: 1 })
        );
        assert_eq!(
            parse_csv("a,b\n1,x\n"),
            Err(TableError::NotANumber { line: 2, column: "b".into(), text: "x".into() })
        );
        assert!(matches!(parse_csv("a,b\n1,NaN\n"), Err(TableError::NotANumber { .. })));
        assert_eq!(parse_csv("a,a\n1,2\n"), Err(TableError::DuplicateColumn("a".into())));
        let t = parse_csv("a,b\n1,2\n").unwrap();
        assert!(t.features_and_target("y").unwrap_err().to_string().contains("[\"a\", \"b\"]"));
    }
}
