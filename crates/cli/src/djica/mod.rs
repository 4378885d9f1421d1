/*!
`cape djica` and `cape djica-sweep`: capePCA + capeDJICA on synthetic fMRI (seed 000 §IV–V, spec
cape-secagg-pca-djica §4–§9), with the baselines on the same data and seeds.

`cape djica` writes DIR/result.json (q_NGI, overall ε under every view at J* and J_max, J*, the
parameters, capePCA's principal cosines, the per-iteration history), DIR/W.csv (R×R: the
estimated sources are W·V_Rᵀ·x, whitening included), DIR/V.csv (D×R, the PCA subspace), DIR/A.csv
(D×R, the true maps) and DIR/maps.png (+ .svg: true maps above the matched recovered maps).

`cape djica-sweep` draws seed 000 Figs. 1 and 2 as we measure them: mean q_NGI and overall ε
against ε_i (or against M) for every method, averaged over runs, as CSV, PNG and SVG, plus each
method's threshold ε_i (the smallest grid ε_i with mean q ≤ 0.1) and their ratios (spec §9.4
predicts about 1 : √S : S for cape : conventional : local).

Every run uses the run seed for the data, the noise and the algorithm, so methods compared at one
seed see the same subjects (common random numbers).
*/

mod args;
mod maps;
mod output;
mod pipeline;
mod run;
mod study;
mod sweep;

pub use args::{DjicaArgs, DjicaSweepArgs};
pub use run::run;
pub use sweep::run_sweep;
