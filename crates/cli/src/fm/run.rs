//! `cape fm`: one fit, its evaluation against the non-private fit, printed as JSON or text.

use std::process::ExitCode;

use capelab_core::fm::{Mechanism, Model, evaluate, fit};
use serde_json::Value;

use super::args::{FmArgs, config};
use super::data::load;
use super::output::{fail, human, print_json, run_json};

/// The report of one `cape fm` run.
fn report(args: &FmArgs) -> Result<Value, String> {
    let c = &args.common;
    let model: Model = c.model.into();
    let data = load(&c.data, model.target_kind(), 0.1, c.seed, None)?;
    let mechanism: Mechanism = args.mechanism.into();
    let cfg = config(c, mechanism, c.epsilon, c.delta, c.seed);
    let result = fit(&cfg, &data.train).map_err(|e| e.to_string())?;
    let eval = evaluate(model, &result.w(), &data.train, &data.test, data.w_star.as_ref());
    let np_cfg = config(c, Mechanism::NonPrivate, c.epsilon, c.delta, c.seed);
    let np = fit(&np_cfg, &data.train).map_err(|e| e.to_string())?;
    let np_eval = evaluate(model, &np.w(), &data.train, &data.test, data.w_star.as_ref());
    Ok(run_json(&cfg, &data, &result, &eval, &np_eval))
}

pub fn run(args: FmArgs) -> ExitCode {
    match report(&args) {
        Ok(v) if args.json => print_json(&v),
        Ok(v) => {
            print!("{}", human(&v));
            ExitCode::SUCCESS
        }
        Err(m) => fail(m),
    }
}
