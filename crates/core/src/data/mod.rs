/*!
Tabular data for the regression and classification experiments: parsing, normalisation, splits,
and the seeded synthetic generators of spec cape-fm §5 and §6.1.

Core never touches the filesystem: [`table::parse_csv`] takes the text, the CLI reads the file.

- [`table`]: a CSV table of numbers with a header row.
- [`dataset`]: features and targets as matrices, train/test splits and the split across sites.
- [`normalise`]: mapping raw features into the unit ball and targets into [−1, 1] (or {0, 1}),
  from public bounds, by per-record clipping, or (not private, spec §7.9) from the data.
- [`synthetic`]: the regression recipe of spec §6.1 \[R\] and the two-Gaussian classes of §5.
*/

pub mod dataset;
pub mod normalise;
pub mod synthetic;
pub mod table;

pub use dataset::{Dataset, DatasetError};
pub use normalise::{Bounds, Normalisation, NormaliseError, Normaliser, TargetKind};
pub use table::{FeaturesAndTarget, Table, TableError, parse_csv};
