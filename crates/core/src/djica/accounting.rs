/*!
The overall privacy of a capePCA + capeDJICA study (spec §5 "Accounting", "Collusion-aware
accounting"; §8 pitfall 4): every iteration releases Ĝ_s and ĥ_s, two Gaussian releases with noise
multipliers z_W = τ_G^s/Δ_G^s and z_b = τ_h^s/Δ_h^s, so J iterations compose to RDP
ρ(α) = c·α·J/(2σ_RDP²) with 1/σ_RDP² = 1/z_W² + 1/z_b², where c is the view's collusion factor.
capePCA is one more Gaussian release (multiplier z_p) against a **separate** budget (ε_p, δ_p).

Views, each reported at the realised J* (restarts included) and at J_max (the worst case):
- **output** (c = 1): the paper's IV-A analysis of the aggregator's output only;
- **aggregator** (S_C = 0): the aggregator, which receives every site's message â_s
  (`cape::privacy::c_s_closed_form` with no colluders: 2S/(S+1) for CAPE; 1 for the
  conventional and local baselines, whose messages carry independent noise);
- **Theorem 1** (S_C = ⌈S/3⌉ − 1): the paper's colluding adversary (CAPE only);
- **full** (S_C = ⌈S/3⌉ − 1): the colluding adversary that also uses the colluders' own noise
  (`cape::privacy::c_s_full_view`), the threat model's real view (CAPE only). This is the
  **guarantee** of a CAPE run, as in `crate::nn::privacy` and the mean study.

Each view gives ε at δ_r by RDP with the standard conversion at the exact optimal order (the
paper's closed form ε = C + 2√(C ln(1/δ_r)), C = c·J/(2σ_RDP²)), by RDP with Balle et al.'s
improved conversion, and exactly (J iterations of two Gaussian releases are one Gaussian release
with multiplier σ_RDP/√(cJ)).

For a site's ledger ([`ledger_releases`]) the releases are recorded the way the mean study does:
Gaussian events with the full view's collusion factor.
*/

use serde::{Deserialize, Serialize};

use super::noise::NoiseScheme;
use super::run::{DjicaPrivacy, Method};
use crate::accountant::analytic_gaussian::composed_epsilon;
use crate::accountant::{
    AccountantError, Conversion, Event, Mechanism, PrivacyAccountant, RdpAccountant, Release,
};
use crate::cape::privacy::{Collusion, PrivacyError, c_s_closed_form, c_s_full_view};
use crate::pca::PcaPrivacy;

/// The δ at which overall ε is reported (spec §5: δ_r = 1e-5).
pub const REPORT_DELTA: f64 = 1e-5;

/// Why a study's privacy could not be accounted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AccountingError {
    #[error(transparent)]
    Accountant(#[from] AccountantError),
    #[error(transparent)]
    Collusion(#[from] PrivacyError),
    #[error("the run made no iteration, so there is nothing to account")]
    NoIterations,
}

/// One view's collusion factor c and name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    /// "output", "aggregator", "theorem1" or "full".
    pub name: String,
    /// What the adversary sees, in words.
    pub description: String,
    /// c (c_S): the per-release RDP is c·α/(2z²).
    pub collusion_factor: f64,
}

/// The ε of `iterations` composed iterations (or of the one PCA release) under one view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewEpsilon {
    /// The view's name (see [`View`]).
    pub view: String,
    /// Its collusion factor.
    pub collusion_factor: f64,
    /// RDP, standard conversion at the exact optimal order: C + 2√(C ln(1/δ)).
    pub epsilon_rdp: f64,
    /// RDP, Balle et al. 2020's improved conversion.
    pub epsilon_rdp_improved: f64,
    /// The exact Gaussian composition (the tightest).
    pub epsilon_exact: f64,
}

/// Every view's ε at one iteration count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Composition {
    /// Iterations composed (J* or J_max).
    pub iterations: usize,
    /// One entry per view, in the order of [`StudyAccount::views`].
    pub views: Vec<ViewEpsilon>,
}

impl Composition {
    /// The exact ε of the named view.
    pub fn exact(&self, view: &str) -> Option<f64> {
        self.views.iter().find(|v| v.view == view).map(|v| v.epsilon_exact)
    }
}

/// capeDJICA's overall privacy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IcaAccount {
    /// z_W and z_b.
    pub z_w: f64,
    pub z_b: f64,
    /// σ_RDP with 1/σ_RDP² = 1/z_W² + 1/z_b²: one iteration's multiplier.
    pub sigma_rdp: f64,
    /// At the realised J*.
    pub at_realised: Composition,
    /// At J_max.
    pub at_max: Composition,
}

/// capePCA's privacy: one release, its own budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcaAccount {
    /// z_p = τ_s/Δ_C^s.
    pub z: f64,
    /// (ε_p, δ_p) the noise was calibrated for.
    pub epsilon_per_release: f64,
    pub delta_per_release: f64,
    /// The one release under every view, at δ_r.
    pub release: Composition,
}

/// The privacy of a whole study: ICA and PCA separately, with the views used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyAccount {
    /// δ_r of every ε below.
    pub delta: f64,
    /// The views reported (their order is the order of every [`Composition::views`]).
    pub views: Vec<View>,
    /// The view that is the guarantee ("full" for CAPE, "aggregator" otherwise).
    pub guarantee_view: String,
    /// capeDJICA, `None` when non-private.
    pub ica: Option<IcaAccount>,
    /// capePCA, `None` when non-private.
    pub pca: Option<PcaAccount>,
}

impl StudyAccount {
    /// capeDJICA's ε under the guarantee view at J* (exact composition), if private.
    pub fn ica_epsilon(&self) -> Option<f64> {
        self.ica.as_ref().and_then(|i| i.at_realised.exact(&self.guarantee_view))
    }

    /// capeDJICA's ε under the guarantee view at J_max, if private.
    pub fn ica_epsilon_at_max(&self) -> Option<f64> {
        self.ica.as_ref().and_then(|i| i.at_max.exact(&self.guarantee_view))
    }
}

/// The views of a method's releases among `sites` sites.
pub fn views(method: Method, sites: usize) -> Result<Vec<View>, AccountingError> {
    let output = View {
        name: "output".into(),
        description: "the aggregator's output only (the paper's IV-A analysis)".into(),
        collusion_factor: 1.0,
    };
    if method != Method::Cape || sites < 2 {
        return Ok(vec![
            output,
            View {
                name: "aggregator".into(),
                description: "the aggregator, which sees every site's message (independent noise)"
                    .into(),
                collusion_factor: 1.0,
            },
        ]);
    }
    let collusion = Collusion::default_for(sites)?;
    let alone = Collusion::new(sites, 0)?;
    let colluders = collusion.colluders();
    Ok(vec![
        output,
        View {
            name: "aggregator".into(),
            description: "the aggregator, which sees every site's message (S_C = 0)".into(),
            collusion_factor: c_s_closed_form(&alone),
        },
        View {
            name: "theorem1".into(),
            description: format!("the paper's Theorem 1 adversary with S_C = {colluders}"),
            collusion_factor: c_s_closed_form(&collusion),
        },
        View {
            name: "full".into(),
            description: format!(
                "aggregator and S_C = {colluders} colluding sites using their own noise"
            ),
            collusion_factor: c_s_full_view(&collusion),
        },
    ])
}

/// ε at `delta` of `count` releases, each composed of Gaussian releases whose multipliers
/// combine to `sigma` (1/σ² = Σ 1/z²), under the view with factor c.
fn compose(
    view: &View,
    sigma: f64,
    count: usize,
    delta: f64,
) -> Result<ViewEpsilon, AccountingError> {
    let count = count as u64;
    let event = Event::with_collusion_factor(
        view.name.clone(),
        Mechanism::Gaussian { noise_multiplier: sigma },
        count,
        view.collusion_factor,
    )?;
    let mut rdp = RdpAccountant::new(Conversion::Standard);
    rdp.compose(&event);
    Ok(ViewEpsilon {
        view: view.name.clone(),
        collusion_factor: view.collusion_factor,
        epsilon_rdp: rdp.epsilon_with(delta, Conversion::Standard)?.epsilon,
        epsilon_rdp_improved: rdp.epsilon_with(delta, Conversion::Improved)?.epsilon,
        epsilon_exact: composed_epsilon(event.effective_noise_multiplier(), count, delta)?,
    })
}

fn composition(
    views: &[View],
    sigma: f64,
    count: usize,
    delta: f64,
) -> Result<Composition, AccountingError> {
    Ok(Composition {
        iterations: count,
        views: views.iter().map(|v| compose(v, sigma, count, delta)).collect::<Result<_, _>>()?,
    })
}

/// σ_RDP of one iteration: 1/σ² = 1/z_W² + 1/z_b² (spec §5).
pub fn iteration_multiplier(z_w: f64, z_b: f64) -> f64 {
    1.0 / (1.0 / (z_w * z_w) + 1.0 / (z_b * z_b)).sqrt()
}

/// The study's account at δ_r = `delta`. `pca` is capePCA's record (its scheme decides its views:
/// CAPE among the ICA's sites, or plain Gaussian).
pub fn account(
    ica: &DjicaPrivacy,
    pca: Option<&PcaPrivacy>,
    delta: f64,
) -> Result<StudyAccount, AccountingError> {
    let ica_views = views(ica.method, ica.sites)?;
    let guarantee_view =
        if ica_views.iter().any(|v| v.name == "full") { "full" } else { "aggregator" }.to_string();
    let ica_account = match (ica.z_w, ica.z_b) {
        (Some(z_w), Some(z_b)) => {
            if ica.iterations == 0 {
                return Err(AccountingError::NoIterations);
            }
            let sigma = iteration_multiplier(z_w, z_b);
            Some(IcaAccount {
                z_w,
                z_b,
                sigma_rdp: sigma,
                at_realised: composition(&ica_views, sigma, ica.iterations, delta)?,
                at_max: composition(
                    &ica_views,
                    sigma,
                    ica.max_iterations.max(ica.iterations),
                    delta,
                )?,
            })
        }
        _ => None,
    };
    let pca_account = match pca {
        Some(p) => match (p.multiplier, p.level) {
            (Some(z), Some(level)) => {
                let pca_views = match p.scheme {
                    NoiseScheme::Cape => views(Method::Cape, p.deltas.len())?,
                    _ => views(Method::Conventional, p.deltas.len())?,
                };
                Some(PcaAccount {
                    z,
                    epsilon_per_release: level.epsilon,
                    delta_per_release: level.delta,
                    release: composition(&pca_views, z, 1, delta)?,
                })
            }
            _ => None,
        },
        None => None,
    };
    Ok(StudyAccount { delta, views: ica_views, guarantee_view, ica: ica_account, pca: pca_account })
}

/// The run's releases as a site's ledger records them (as the mean study does: Gaussian events
/// under the guarantee view's collusion factor): capePCA's release, then the ICA's Ĝ and ĥ
/// releases of all J* iterations (one event each, with count J*). Non-private parts record nothing.
pub fn ledger_releases(
    account: &StudyAccount,
    study: &str,
    time_ms: u64,
) -> Result<Vec<Release>, AccountingError> {
    let factor = account
        .views
        .iter()
        .find(|v| v.name == account.guarantee_view)
        .map_or(1.0, |v| v.collusion_factor);
    let mut events = vec![];
    if let Some(p) = &account.pca {
        let pca_factor = p
            .release
            .views
            .iter()
            .find(|v| v.view == account.guarantee_view)
            .map_or(1.0, |v| v.collusion_factor);
        events.push(Event::with_collusion_factor(
            "djica/pca covariance",
            Mechanism::Gaussian { noise_multiplier: p.z },
            1,
            pca_factor,
        )?);
    }
    if let Some(i) = &account.ica {
        let count = i.at_realised.iterations as u64;
        for (label, z) in [("djica/gradient G", i.z_w), ("djica/bias h", i.z_b)] {
            events.push(Event::with_collusion_factor(
                label,
                Mechanism::Gaussian { noise_multiplier: z },
                count,
                factor,
            )?);
        }
    }
    Ok(events.into_iter().map(|event| Release::new(study, event, time_ms)).collect())
}
