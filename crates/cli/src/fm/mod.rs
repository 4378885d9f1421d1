/*!
`cape fm` and `cape fm-sweep`: private linear and logistic regression with the functional
mechanism (spec cape-fm §2–§4, §6), one run or averaged sweeps over ε, N or δ with CSV and figures.

The numbers come from `capelab_core::fm`; this module loads and normalises data, parses flags,
aggregates runs, and formats. Data sources (`--data`):
- `synthetic`: linear: spec §6.1's recipe with public normalisation; logistic: two Gaussian classes
  (means ±0.25, spec §5) clipped to a public radius. `--samples` is the training size; a further
  N/9 records form the test set (S1's 90:10).
- `diabetes`, `breast-cancer`: the CSVs that `scripts/fetch_datasets.py` writes into `data/`
  (from scikit-learn at set-up time, never downloaded here); or any `PATH.csv` with a header and a
  numeric target column (`--target`). Real data need `--bounds FILE.json` (public bounds) or
  `--data-dependent-scaling` (the papers' recipe, **not private**, reported with a warning).
  10% is held out; `--samples` subsamples the training part.
*/

mod args;
mod charts;
mod csv;
mod data;
mod output;
mod run;
mod sweep;

pub use args::{CalibrationArg, DataArgs, FmArgs, SweepArgs, parse_list};
pub use data::{Loaded, load};
pub use run::run;
pub use sweep::{run_sweep, stats};
