/*!
capeDJICA (spec §5, Algorithm 4): decentralized joint ICA by infomax with per-sample clipping and
CAPE noise on every iteration's averaged gradient, with its baselines (spec §6).

- [`gradient`]: the site's clipped mean natural gradient, the hot loop ([`logistic`] is its
  nonlinearity, [`kernels`] its matrix kernels).
- [`site`]: the site side ([`DjicaSite::release`]) and the aggregator side ([`aggregate`],
  [`DjicaAggregator::apply`]) of one iteration, as the browser splits them.
- [`schedule`]: the learning-rate rules and stopping test (runica's, plus a decay that survives
  noise).
- [`accounting`]: the overall ε of capePCA and capeDJICA (RDP and exact composition; output,
  aggregator, Theorem 1 and full collusion-aware views; at J* and J_max) and the ledger records.
- [`calibration`]: sensitivities per privacy unit and the Gaussian mechanism's τ.
- [`noise`]: the zero-sum noise seam ([`ZeroSumNoise`]) and the per-site noise schemes.
- [`run`]: one process driving all sites and the aggregator, with an observer per iteration.
- [`pipeline`]: capePCA, projection and capeDJICA end to end.
*/

pub mod accounting;
pub mod calibration;
pub mod gradient;
pub mod kernels;
pub mod logistic;
pub mod noise;
pub mod pipeline;
pub mod run;
pub mod schedule;
pub mod site;
pub mod target;

pub use accounting::{REPORT_DELTA, StudyAccount, account, ledger_releases};
pub use calibration::{GaussianLevel, PrivacyUnit};
pub use gradient::{
    BlockFloat, ClipBounds, GradientWorkspace, SampleColumns, SiteGradient, site_gradient,
};
pub use noise::{CapeZeroSumNoise, NoiseError, NoiseScheme, ZeroSumNoise};
pub use pipeline::{PcaSettings, StudyData, StudyError, StudyResult, run_study};
pub use run::{
    DjicaConfig, DjicaError, DjicaPrivacy, DjicaResult, IterationRecord, IterationReport, Method,
    ProjectedSite, StopReason, run_djica,
};
pub use schedule::{RateController, Schedule, Verdict};
pub use site::{DjicaAggregator, DjicaSite, Precision, SiteNoiseScales, SiteRelease, aggregate};
pub use target::{TargetError, TargetLevel, level_for_target};
