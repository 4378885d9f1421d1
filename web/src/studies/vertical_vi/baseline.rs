//! A CLI run beside the browser's: `cape vertical-vi --mode nonpartitioned … --json` prints the
//! run's settings and its test NLL at every evaluation (`test_nll`: step, epoch, NLL, the same
//! mean NLL per record at the posterior median as the dashboard's curve). The dashboard loads that
//! file, draws it as a second line on the NLL chart, and names every setting in which the two
//! runs differ. Pure, tested natively against a real CLI output (`testdata/`).

use capelab_vertical_vi::modes::EvalPoint;
use capelab_vertical_vi::study::VviTask;
use serde::Deserialize;

use crate::components::charts::scale::format_value;
use crate::studies::vertical_vi::run::VviData;

/// One party of the CLI's table: its name and columns.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CliParty {
    pub name: String,
    pub columns: Vec<String>,
}

/// What the dashboard reads of `cape vertical-vi --json` (the rest of the object is ignored).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CliRun {
    /// "CPS1988", "generated Adult-like table (3000 rows)" or the party files' names.
    pub data: String,
    /// "nonpartitioned" for the baseline; "mpc", "fixed", "plain" otherwise.
    pub mode: String,
    pub parties: Vec<CliParty>,
    pub components: usize,
    pub sigma: f64,
    pub clip: f64,
    pub batch: usize,
    pub steps: usize,
    pub learning_rate: f64,
    pub seed: Option<u64>,
    pub train_records: usize,
    pub test_nll: Vec<EvalPoint>,
}

/// How to make a file the dashboard reads.
pub const HOW: &str = "cape vertical-vi --mode nonpartitioned … --json > baseline.json";

/// The CLI's JSON, or what is wrong with it and how to get a right one.
pub fn parse(text: &str) -> Result<CliRun, String> {
    let run: CliRun = serde_json::from_str(text).map_err(|e| {
        format!("this is not the output of `cape vertical-vi --json` ({e}); make one with `{HOW}`")
    })?;
    if run.test_nll.len() < 2 {
        return Err(format!(
            "the CLI run has {} test NLL point(s), a curve needs two: run it with \
             `--eval-every N` (N below its {} steps)",
            run.test_nll.len(),
            run.steps
        ));
    }
    if let Some(p) = run.test_nll.iter().find(|p| !p.test_nll.is_finite()) {
        return Err(format!("the CLI run's test NLL at step {} is not a number", p.step));
    }
    Ok(run)
}

impl CliRun {
    /// The name of a table as the CLI prints it, for the dashboard's tables that it can run on.
    fn expected_data(data: &VviData) -> Option<String> {
        match data {
            VviData::Generated { rows, .. } => {
                Some(format!("generated Adult-like table ({rows} rows)"))
            }
            VviData::Cps1988 => Some("CPS1988".into()),
            // The CLI names party files by their paths: nothing to compare with.
            VviData::Own { .. } => None,
        }
    }

    /// The line's name in the legend.
    pub fn legend(&self) -> String {
        let what = if self.mode == "nonpartitioned" { "non-partitioned baseline" } else { "run" };
        format!("CLI {what} (mode {}, K = {}, T = {})", self.mode, self.components, self.steps)
    }

    /// The run's settings in one line.
    pub fn settings(&self) -> String {
        format!(
            "CLI run, mode {} on {}: K = {}, σ = {}, C = {}, B = {}, T = {}, learning rate {}, {} \
             training rows, {}",
            self.mode,
            self.data,
            self.components,
            format_value(self.sigma),
            format_value(self.clip),
            self.batch,
            self.steps,
            format_value(self.learning_rate),
            self.train_records,
            self.seed.map_or("seed from the OS".to_string(), |s| format!("seed {s}"))
        )
    }

    /// Every setting in which this CLI run differs from the dashboard's run of `task` on `data`,
    /// each as "what: the CLI's …, this run's …".
    pub fn mismatches(&self, task: &VviTask, data: &VviData) -> Vec<String> {
        let mut out = Vec::new();
        if self.mode != "nonpartitioned" {
            out.push(format!(
                "mode: the CLI ran `{}`, not the non-partitioned baseline (`--mode \
                 nonpartitioned`)",
                self.mode
            ));
        }
        if let Some(ours) = Self::expected_data(data)
            && ours != self.data
        {
            out.push(format!("table: the CLI ran on {}, this run is on {ours}", self.data));
        }
        let columns = |parties: Vec<Vec<String>>| {
            parties.iter().map(|c| c.join(", ")).collect::<Vec<_>>().join(" | ")
        };
        let cli = columns(self.parties.iter().map(|p| p.columns.clone()).collect());
        let ours = columns(
            task.schema
                .parties
                .iter()
                .map(|p| p.features.iter().map(|f| f.name.clone()).collect())
                .collect(),
        );
        if cli != ours {
            out.push(format!("columns: the CLI's parties hold {cli}, this run's {ours}"));
        }
        let mut differs = |what: &str, cli: String, ours: String| {
            if cli != ours {
                out.push(format!("{what}: the CLI's {cli}, this run's {ours}"));
            }
        };
        differs("K (components)", self.components.to_string(), task.components.to_string());
        differs("σ (noise)", format_value(self.sigma), format_value(task.noise_multiplier));
        differs("C (clip)", format_value(self.clip), format_value(task.clip));
        differs("B (batch)", self.batch.to_string(), task.batch.to_string());
        differs("T (steps)", self.steps.to_string(), task.steps.to_string());
        differs(
            "learning rate",
            format_value(self.learning_rate),
            format_value(task.learning_rate),
        );
        differs("training rows", self.train_records.to_string(), task.train_rows().to_string());
        out
    }

    /// (step, test NLL) points, for the chart.
    pub fn points(&self) -> Vec<(f64, f64)> {
        self.test_nll.iter().map(|p| (p.step as f64, p.test_nll)).collect()
    }
}

/// The CLI command that makes the non-partitioned baseline of the dashboard's run of `task` on
/// `data` (the parties' own columns cannot be joined anywhere: their baseline runs on CPS1988,
/// whose schema they share).
pub fn cli_command(task: &VviTask, data: &VviData) -> String {
    let table = match data {
        VviData::Generated { rows, .. } => format!("--data synthetic --generated-rows {rows}"),
        VviData::Cps1988 | VviData::Own { .. } => "--data cps1988".into(),
    };
    format!(
        "cape vertical-vi --mode nonpartitioned {table} --components {} --sigma {} --clip {} \
         --batch {} --steps {} --learning-rate {} --eval-every {} --json > baseline.json",
        task.components,
        task.noise_multiplier,
        task.clip,
        task.batch,
        task.steps,
        task.learning_rate,
        (task.steps / 50).max(1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::vertical_vi::run::{VviFields, VviSource};

    /// A real `cape vertical-vi --mode nonpartitioned --json` output (its command in
    /// `testdata/README.md`).
    const CLI: &str = include_str!("testdata/vvi_nonpartitioned_cps1988.json");

    fn cps_task(fields: &VviFields) -> (VviTask, VviData) {
        let data = fields.source.data(fields.rows, 1);
        (fields.task(&data, vec![2, 3], 4, 1, 1).unwrap(), data)
    }

    #[test]
    fn a_real_cli_output_is_read_with_its_settings_and_curve() {
        let run = parse(CLI).unwrap();
        assert_eq!((run.data.as_str(), run.mode.as_str()), ("CPS1988", "nonpartitioned"));
        assert_eq!((run.components, run.batch, run.steps), (5, 30, 200));
        assert_eq!(run.parties[1].columns, ["wage", "parttime"]);
        assert_eq!(run.test_nll.len(), 21, "every 10 steps from step 0");
        assert_eq!(run.points()[0].0, 0.0);
        assert_eq!(run.points()[20].0, 200.0);
        assert!(run.points().last().unwrap().1 < run.points()[0].1, "the baseline learns");
        assert!(run.settings().starts_with("CLI run, mode nonpartitioned on CPS1988: K = 5"));
        assert!(run.legend().contains("non-partitioned baseline"));
    }

    #[test]
    fn every_setting_that_differs_is_named_and_none_else() {
        let run = parse(CLI).unwrap();
        // The browser's defaults on CPS1988: only T differs (the CLI ran 200 steps).
        let fields = VviFields { source: VviSource::Cps1988, ..VviFields::default() };
        let (task, data) = cps_task(&fields);
        let m = run.mismatches(&task, &data);
        assert_eq!(m, ["T (steps): the CLI's 200, this run's 20"], "{m:?}");
        // Another table and K: both named.
        let fields = VviFields { components: 3, steps: 200, ..VviFields::default() };
        let (task, data) = cps_task(&fields);
        let m = run.mismatches(&task, &data).join("\n");
        assert!(m.contains("table: the CLI ran on CPS1988, this run is on generated Adult-like table (1000 rows)"), "{m}");
        assert!(m.contains("K (components): the CLI's 5, this run's 3"), "{m}");
        assert!(m.contains("columns: the CLI's parties hold education"), "{m}");
        // Own columns: the table cannot be compared by name, the columns can.
        let fields =
            VviFields { source: VviSource::Own, rows: 28_155, steps: 200, ..VviFields::default() };
        let (task, data) = cps_task(&fields);
        assert!(run.mismatches(&task, &data).is_empty(), "{:?}", run.mismatches(&task, &data));
    }

    #[test]
    fn the_suggested_command_is_this_run_s_settings() {
        let fields = VviFields { source: VviSource::Cps1988, ..VviFields::default() };
        let (task, data) = cps_task(&fields);
        assert_eq!(
            cli_command(&task, &data),
            "cape vertical-vi --mode nonpartitioned --data cps1988 --components 5 --sigma 1 \
             --clip 1 --batch 30 --steps 20 --learning-rate 0.05 --eval-every 1 --json > \
             baseline.json"
        );
        let (task, data) = cps_task(&VviFields { rows: 400, ..VviFields::default() });
        assert!(cli_command(&task, &data).contains("--data synthetic --generated-rows 400"));
    }

    #[test]
    fn what_is_not_a_cli_run_is_refused_saying_how_to_make_one() {
        let e = parse("{\"points\": []}").unwrap_err();
        assert!(
            e.contains("not the output of `cape vertical-vi --json`") && e.contains(HOW),
            "{e}"
        );
        let mut v: serde_json::Value = serde_json::from_str(CLI).unwrap();
        v["test_nll"] = serde_json::json!([{ "step": 0, "epoch": 0.0, "test_nll": 3.2 }]);
        let e = parse(&v.to_string()).unwrap_err();
        assert!(e.contains("1 test NLL point(s)") && e.contains("--eval-every"), "{e}");
        let e = parse("not json").unwrap_err();
        assert!(e.contains("not the output"), "{e}");
    }
}
