/*!
The native half of the `capelab` Python package (`capelab._capelab`), built by maturin as one abi3
extension module. Each file binds one part of the core and holds no study logic of its own: it
checks arguments (every refusal a `ValueError` naming the argument), converts numpy arrays, runs
the core with the GIL released, and returns the core's results as Python objects. The public,
documented API is the pure-Python package in `python/capelab/`, which calls these functions.
*/

mod accountant;
mod cape;
mod common;
mod djica;
mod efpsn;
mod fm;
mod ledger;
mod nn;
mod secagg;
mod vertical_vi;

use pyo3::prelude::*;

#[pymodule]
fn _capelab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(accountant::account_one, m)?)?;
    m.add_function(wrap_pyfunction!(accountant::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(accountant::compare, m)?)?;
    m.add_class::<ledger::PyLedger>()?;
    m.add_function(wrap_pyfunction!(cape::cape_collusion_factor, m)?)?;
    m.add_function(wrap_pyfunction!(cape::cape_release_privacy, m)?)?;
    m.add_function(wrap_pyfunction!(cape::cape_classical_noise_multiplier, m)?)?;
    m.add_function(wrap_pyfunction!(cape::cape_round, m)?)?;
    m.add_function(wrap_pyfunction!(cape::cape_conventional_round, m)?)?;
    m.add_function(wrap_pyfunction!(cape::cape_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(secagg::secagg_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(secagg::secagg_choose_harary, m)?)?;
    m.add_function(wrap_pyfunction!(djica::djica_synthetic, m)?)?;
    m.add_function(wrap_pyfunction!(djica::djica_normalise, m)?)?;
    m.add_function(wrap_pyfunction!(djica::djica_pca, m)?)?;
    m.add_function(wrap_pyfunction!(djica::djica_run, m)?)?;
    m.add_function(wrap_pyfunction!(fm::data_synthetic, m)?)?;
    m.add_function(wrap_pyfunction!(fm::data_normalise, m)?)?;
    m.add_function(wrap_pyfunction!(fm::fm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(fm::fm_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(nn::nn_train, m)?)?;
    m.add_function(wrap_pyfunction!(efpsn::efpsn_run, m)?)?;
    m.add_function(wrap_pyfunction!(vertical_vi::vvi_cps1988_schema, m)?)?;
    m.add_function(wrap_pyfunction!(vertical_vi::vvi_cps1988_split, m)?)?;
    m.add_function(wrap_pyfunction!(vertical_vi::vvi_fit, m)?)?;
    m.add_class::<vertical_vi::PyPosterior>()?;
    m.add("InsufficientBudget", m.py().get_type::<ledger::InsufficientBudget>())?;
    Ok(())
}
