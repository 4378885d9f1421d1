//! The synthetic-data report of a run (`cape vertical-vi --report`, and every run of the sweep):
//! a twin as large as the real test set, compared with it column by column (total variation),
//! pair by pair (Cramér's V) and on one prediction task (train on synthetic, test on real,
//! against train on real). The non-partitioned baseline's twin is split back into the parties'
//! blocks first.

use capelab_core::rng::Seed;
use capelab_vertical_vi::model::Posterior;
use capelab_vertical_vi::model::train::split_parties;
use capelab_vertical_vi::report::{Report, ReportConfig, TargetSpec, report};

use super::args::Data;

fn config(target: Option<TargetSpec>) -> ReportConfig {
    ReportConfig { target, ..ReportConfig::default() }
}

/// Fails, naming the problem, when `target` does not fit the schema (an unknown column, a label
/// the column lacks, a threshold on a categorical column), before anything is trained: the
/// report of the real test set against itself runs every check the real report will.
pub fn check_target(data: &Data, target: Option<&TargetSpec>) -> Result<(), String> {
    report(&data.schema, &data.test, &data.test, Some(&data.train), &config(target.cloned()))
        .map(|_| ())
        .map_err(|e| format!("--target: {e}"))
}

/// The report of a twin of `rows` rows (default: the real test set's) drawn from `posterior`
/// with `seed`'s "vvi/report-twin" stream.
pub fn synthetic_report(
    data: &Data,
    posterior: &Posterior,
    rows: Option<usize>,
    seed: Seed,
    target: Option<TargetSpec>,
) -> Result<Report, String> {
    let rows = rows.unwrap_or(data.test[0].rows);
    let mut twin = posterior.sample_twin(rows, &mut seed.rng("vvi/report-twin"));
    if posterior.model.schema.parties.len() != data.schema.parties.len() {
        // The non-partitioned baseline's twin: one joined block, handed back per party.
        twin = split_parties(&data.schema, &twin[0]);
    }
    report(&data.schema, &data.test, &twin, Some(&data.train), &config(target))
        .map_err(|e| format!("the synthetic-data report: {e}"))
}
