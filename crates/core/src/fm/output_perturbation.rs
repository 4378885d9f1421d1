/*!
Output perturbation: the baseline the authors call "objPert" (spec cape-fm §6.1, §7.8).

S2 describes objective perturbation "with sensitivity 2", but the authors' code adds noise to the
optimum: ŵ + b with density ∝ exp(−(ε/2)‖b‖). For unregularised regression the optimum has no
bounded sensitivity, so the "2" can only be the diameter of a ball: here the non-private ŵ is first
projected onto the public ball ‖w‖ ≤ R (R = 1 in the papers' setting, where ‖w*‖ = 1). Any two
outputs then differ by at most 2R, and adding b with density ∝ exp(−ε‖b‖/(2R)) is ε-DP
(Chaudhuri et al. 2011, with L2 sensitivity 2R).
*/

use nalgebra::DVector;

use crate::data::Dataset;
use crate::rng::CapeRng;

use super::model::Model;
use super::noise::draw_norm_laplace;
use super::nonprivate;

/// ŵ = Π_R(w_exact) + b, and the noise scale 2R/ε (E‖b‖ = D·2R/ε).
pub fn output_perturbation(
    model: Model,
    data: &Dataset,
    epsilon: f64,
    radius: f64,
    rng: &mut CapeRng,
) -> (DVector<f64>, f64) {
    let mut w = nonprivate::fit(model, data);
    let norm = w.norm();
    if norm > radius {
        w *= radius / norm;
    }
    let scale = 2.0 * radius / epsilon;
    let b = draw_norm_laplace(w.len(), scale, rng);
    (w + DVector::from_vec(b), scale)
}
