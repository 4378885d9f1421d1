"""capePCA + capeDJICA (seed 000 §IV–V; spec cape-secagg-pca-djica §4–§5): private decentralized
joint ICA of fMRI across sites, on one numpy array per site.

A site's array is D × N_s (voxels × time points, its subjects' time courses concatenated), as the
``cape djica --data`` files; every time point must lie in the clip ball ‖x‖ ≤ 1 that bounds the
sensitivities (``normalise=True`` or :func:`normalise` puts raw data there). Results are the
``cape djica`` CLI's, bit for bit, for the same data and seed.

>>> from capelab import djica
>>> study = djica.synthetic(sites=3, subjects=12, components=4, grid=8, timepoints=60, seed=1)
>>> result = djica.run(study.sites, study.truth, components=4, timepoints=60,
...                    max_iterations=50, seed=1)
>>> result.W.shape, result.maps.shape
((4, 4), (64, 4))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, Sequence

import numpy as np

from . import _capelab, _check, _progress

__all__ = ["SyntheticStudy", "Pca", "DjicaResult", "synthetic", "normalise", "pca", "run", "METHODS"]

#: capeDJICA, the conventional scheme (independent noise per site), local DP-ICA (site 0 alone),
#: decentralized djICA without noise, and all data pooled without noise.
METHODS = ("cape", "conventional", "local", "nonprivate", "pooled")


@dataclass(frozen=True)
class SyntheticStudy:
    """Seeded synthetic fMRI with ground truth (``cape djica``'s generator)."""

    #: One (D, N_s) array per site, already normalised (‖x‖ ≤ 1 per time point).
    sites: List[np.ndarray]
    #: The true spatial maps A (D × R, unit-norm columns): q_NGI is measured against them.
    truth: np.ndarray
    #: N_m of each subject, per site.
    subject_lengths: List[List[int]]
    #: Time points per subject (all equal here).
    timepoints: int
    #: The maps are grid × grid images (D = grid²; voxel v = row·grid + column).
    grid: int
    #: Fraction of time points the clip at ‖x‖ = 1 scaled down.
    clipped_fraction: float


def synthetic(
    *,
    sites: int = 4,
    subjects: int = 256,
    components: int = 20,
    grid: int = 30,
    timepoints: int = 250,
    preset: Literal["default", "paper"] = "default",
    seed: int = 1,
) -> SyntheticStudy:
    """``subjects`` synthetic subjects split as evenly as possible over ``sites``: R GARCH sources
    mixed by blob maps on a grid × grid image, ``timepoints`` per subject; the ``"default"``
    preset is well conditioned, ``"paper"`` the seed paper's harder one (spec §6, §9.7)."""
    s = _check.integer("sites", sites, 1, 10_000)
    m = _check.integer("subjects", subjects, s)
    g = _check.integer("grid", grid, 2, 1_000)
    r = _check.integer("components", components, 2, g * g)
    t = _check.integer("timepoints", timepoints, 2)
    p = _check.choice("preset", preset, ("default", "paper"))
    out = _capelab.djica_synthetic(s, m, r, g, t, p, _check.integer("seed", seed))
    return SyntheticStudy(out["sites"], out["truth"], out["subject_lengths"], t, g, out["clipped_fraction"])


def _lengths(sites: List[np.ndarray], timepoints, subject_lengths) -> List[List[int]]:
    if (timepoints is None) == (subject_lengths is None):
        raise ValueError(
            "timepoints: give timepoints (every subject has that many time points) or "
            "subject_lengths (one list per site), exactly one of them"
        )
    if timepoints is not None:
        t = _check.integer("timepoints", timepoints, 1)
        out = []
        for i, x in enumerate(sites):
            if x.shape[1] % t:
                raise ValueError(
                    f"sites[{i}]: {x.shape[1]} time points (columns) are not a whole number of "
                    f"subjects of timepoints = {t}"
                )
            out.append([t] * (x.shape[1] // t))
        return out
    if len(subject_lengths) != len(sites):
        raise ValueError(f"subject_lengths: {len(subject_lengths)} lists for {len(sites)} sites")
    out = []
    for i, (x, lengths) in enumerate(zip(sites, subject_lengths)):
        ls = [_check.integer(f"subject_lengths[{i}]", n, 1) for n in lengths]
        if sum(ls) != x.shape[1]:
            raise ValueError(
                f"subject_lengths[{i}]: they add up to {sum(ls)}, sites[{i}] has {x.shape[1]} time points"
            )
        out.append(ls)
    return out


def _sites(sites: Sequence[Any]) -> List[np.ndarray]:
    if isinstance(sites, np.ndarray) or not isinstance(sites, (list, tuple)):
        raise ValueError("sites: expected a list with one (D, N_s) array per site")
    if not sites:
        raise ValueError("sites: no site: give one (D, N_s) array per site")
    # Finite values and the clip ball are checked natively, while the data are copied in.
    arrays = [_check.matrix(f"sites[{i}]", x, finite=False) for i, x in enumerate(sites)]
    d = arrays[0].shape[0]
    for i, x in enumerate(arrays):
        if x.shape[0] != d:
            raise ValueError(f"sites[{i}]: {x.shape[0]} voxels (rows), but sites[0] has {d}")
    return arrays


def normalise(
    x: Any,
    *,
    timepoints: Optional[int] = None,
    subject_lengths: Optional[Sequence[int]] = None,
    scale: float = 1.0,
) -> np.ndarray:
    """One site's D × N_s data as every site prepares it before capePCA (spec §6): each subject's
    time course demeaned, multiplied by the public ``scale`` (choose it from units, not from the
    data), and every time point clipped to ‖x‖ ≤ 1."""
    a = _check.matrix("x", x)
    lengths = _lengths([a], timepoints, None if subject_lengths is None else [list(subject_lengths)])[0]
    out, _clipped = _capelab.djica_normalise(a, lengths, _check.positive("scale", scale))
    return out


@dataclass(frozen=True)
class Pca:
    """capePCA's release: the R-dimensional subspace and what it cost."""

    #: V_R (D × R), orthonormal columns, largest eigenvalue first.
    V: np.ndarray
    eigenvalues: List[float]
    #: K = 2·Λ^(-1/2)·V_Rᵀ (R × D): runica's whitening projection capeDJICA runs in.
    projection: np.ndarray
    #: The noise: scheme, (ε_p, δ_p), Δ_C and τ per site, the multiplier z.
    privacy: Dict[str, Any]


def _prepare(sites, timepoints, subject_lengths, normalise_data, data_scale):
    """The arrays, the subjects' lengths, and the public scale to normalise with (None: the data
    must already lie in the clip ball, which the native side checks)."""
    arrays = _sites(sites)
    lengths = _lengths(arrays, timepoints, subject_lengths)
    scale = _check.positive("data_scale", data_scale) if normalise_data else None
    return arrays, lengths, scale


def pca(
    sites: Sequence[Any],
    *,
    components: int = 20,
    timepoints: Optional[int] = None,
    subject_lengths: Optional[Sequence[Sequence[int]]] = None,
    normalise: bool = False,
    data_scale: float = 1.0,
    private: bool = True,
    method: Literal["cape", "conventional", "local"] = "cape",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    privacy_unit: Literal["subject", "timepoint"] = "subject",
    rigorous: bool = False,
    seed: int = 1,
) -> Pca:
    """capePCA alone (Algorithm 3): each site's covariance X_s X_sᵀ/N_s with symmetric CAPE noise
    for one (``epsilon``, ``delta``) release, the R largest algebraic eigenvalues of the average,
    and runica's whitening. ``private=False`` is exact PCA of the pooled second moments."""
    arrays, lengths, scale = _prepare(sites, timepoints, subject_lengths, normalise, data_scale)
    m = _check.choice("method", method, ("cape", "conventional", "local"))
    if private and m == "cape" and len(arrays) < 2:
        raise ValueError("sites: CAPE needs at least 2 sites (method='local' runs one)")
    d = arrays[0].shape[0]
    out = _capelab.djica_pca(
        arrays,
        lengths,
        _check.integer("components", components, 2, d),
        bool(private),
        _check.positive("epsilon", epsilon),
        _check.open_unit("delta", delta),
        _check.choice("privacy_unit", privacy_unit, ("subject", "timepoint")),
        bool(rigorous),
        m,
        scale,
        _check.integer("seed", seed),
    )
    return Pca(out["V"], out["eigenvalues"], out["projection"], out["privacy"])


@dataclass(frozen=True)
class DjicaResult:
    """A finished capePCA + capeDJICA run."""

    method: str
    #: q_NGI of the recovered unmixing against the true maps (0 is perfect), when truth was given.
    q_ngi: Optional[float]
    #: W (R × R): the estimated sources are W @ V.T @ x (whitening included), as the CLI's W.csv.
    W: np.ndarray
    #: V_R (D × R), the PCA subspace (the CLI's V.csv).
    V: np.ndarray
    #: The total unmixing W·K (R × D): sources = unmixing @ x.
    unmixing: np.ndarray
    #: The estimated spatial maps (D × R, the pseudo-inverse of the unmixing), None if not finite.
    maps: Optional[np.ndarray]
    #: With truth: the maps matched to the true components (column j ↔ true map j), sign-corrected
    #: and unit norm; ``matching`` says which estimate went where and how cleanly.
    aligned_maps: Optional[np.ndarray]
    matching: Optional[Dict[str, List[Any]]]
    #: capeDJICA's overall ε at δ = ``delta`` in the guarantee view (the full colluding view for
    #: CAPE), at the realised J* and at J_max; None when not private. capePCA has its own budget
    #: (``privacy["pca"]``).
    epsilon: Optional[float]
    epsilon_at_max: Optional[float]
    delta: float
    #: Which accountant made ε: "PLD" (J unsampled Gaussian iterations compose exactly, without a
    #: grid); RDP's figures for every view are under ``privacy``.
    accountant: str
    guarantee_view: str
    #: ε_i the iterations ran at (calibrated by PLD when ``target_epsilon`` was given).
    eps_iter: float
    iterations: int
    max_iterations: int
    #: "converged", "max_iterations" or "rate_too_small".
    stop: str
    restarts: int
    final_rate: float
    #: One row per iteration: iteration, rate, change, q.
    history: List[Dict[str, Any]]
    #: The whole account: every view's ε by RDP and exactly, ICA at J* and J_max, and PCA.
    privacy: Dict[str, Any]
    #: capePCA: principal cosines against the truth, eigenvalues, its noise.
    pca: Dict[str, Any]
    #: What a site's ledger records for this run (``Ledger.spend_gaussian`` takes these).
    ledger_releases: Optional[List[Dict[str, Any]]]
    #: With ``target_epsilon``: the calibration (PLD) and the noise RDP would have needed.
    target: Optional[Dict[str, Any]]
    projection: np.ndarray = field(repr=False)

    def sources(self, x: Any) -> np.ndarray:
        """The estimated sources of a D × N array: unmixing @ x."""
        a = _check.matrix("x", x, rows=self.unmixing.shape[1])
        return self.unmixing @ a


def run(
    sites: Sequence[Any],
    truth: Optional[Any] = None,
    *,
    components: int = 20,
    timepoints: Optional[int] = None,
    subject_lengths: Optional[Sequence[Sequence[int]]] = None,
    normalise: bool = False,
    data_scale: float = 1.0,
    method: Literal["cape", "conventional", "local", "nonprivate", "pooled"] = "cape",
    eps_iter: float = 0.5,
    delta_iter: float = 1e-2,
    target_epsilon: Optional[float] = None,
    privacy_unit: Literal["subject", "timepoint"] = "subject",
    pca: Literal["nonprivate", "cape"] = "nonprivate",
    eps_pca: float = 1.0,
    delta_pca: float = 1e-5,
    pca_rigorous: bool = False,
    rate: float = 0.5,
    max_iterations: int = 1000,
    schedule: Literal["auto", "anneal", "decay", "constant"] = "auto",
    half_life: float = 100.0,
    average_tail: float = 0.5,
    clip: float = 30.0,
    seed: int = 1,
    progress: _progress.ProgressArg = None,
) -> DjicaResult:
    """capePCA then capeDJICA across the sites, each holding one D × N_s array of ``sites``.

    ``truth`` (the true maps A, D × R) enables q_NGI and the matched maps. Subjects are
    ``timepoints`` long, or give ``subject_lengths`` per site. The defaults are ``cape djica``'s:
    capeDJICA at subject level with ε_i = 0.5, δ_i = 1e-2 per iteration (``eps_iter``,
    ``delta_iter``; or ``target_epsilon``: the level whose J_max iterations are (ε, 1e-5)-DP in
    the guarantee view, by PLD calibration), exact PCA (``pca="cape"`` for capePCA at
    (``eps_pca``, ``delta_pca``)), ρ₀ = 0.5, J_max = 1000, B_G = 30. ``progress``: None, True
    (a bar on stderr) or ``progress(done, total)``. The GIL is released while it runs."""
    m = _check.choice("method", method, METHODS)
    arrays, lengths, scale = _prepare(sites, timepoints, subject_lengths, normalise, data_scale)
    d = arrays[0].shape[0]
    r = _check.integer("components", components, 2, d)
    if m == "cape" and len(arrays) < 2:
        raise ValueError("sites: CAPE needs at least 2 sites (method='local' runs one)")
    a = None if truth is None else _check.matrix("truth", truth, rows=d, cols=r)
    private = m in ("cape", "conventional", "local")
    if target_epsilon is not None and not private:
        raise ValueError(f"target_epsilon: method {m!r} adds no noise, so it has no ε to calibrate")
    settings = dict(
        method=m,
        components=r,
        eps_iter=_check.positive("eps_iter", eps_iter),
        delta_iter=_check.open_unit("delta_iter", delta_iter),
        privacy_unit=_check.choice("privacy_unit", privacy_unit, ("subject", "timepoint")),
        pca_private=_check.choice("pca", pca, ("nonprivate", "cape")) == "cape",
        eps_pca=_check.positive("eps_pca", eps_pca),
        delta_pca=_check.open_unit("delta_pca", delta_pca),
        pca_rigorous=bool(pca_rigorous),
        rate=_check.positive("rate", rate),
        max_iterations=_check.integer("max_iterations", max_iterations, 1, 10_000_000),
        schedule=_check.choice("schedule", schedule, ("auto", "anneal", "decay", "constant")),
        half_life=_check.positive("half_life", half_life),
        average_tail=_check.fraction("average_tail", average_tail),
        clip=_check.positive("clip", clip),
        target_epsilon=_check.optional(_check.positive, "target_epsilon", target_epsilon),
        normalise_scale=scale,
        seed=_check.integer("seed", seed),
    )
    out = _capelab.djica_run(
        arrays, lengths, a, settings, _progress.callback(progress, f"{m} djICA iteration")
    )
    return DjicaResult(
        method=m,
        q_ngi=out["q_ngi"],
        W=out["W"],
        V=out["V"],
        unmixing=out["unmixing"],
        maps=out["maps"],
        aligned_maps=out["aligned_maps"],
        matching=out["matching"],
        epsilon=out["epsilon"],
        epsilon_at_max=out["epsilon_at_max"],
        delta=out["delta"],
        accountant="PLD" if private else "none (not private)",
        guarantee_view=out["guarantee_view"],
        eps_iter=out["eps_iter"],
        iterations=out["iterations"],
        max_iterations=out["max_iterations"],
        stop=out["stop"],
        restarts=out["restarts"],
        final_rate=out["final_rate"],
        history=out["history"],
        privacy=out["privacy"],
        pca=out["pca"],
        ledger_releases=out["ledger_releases"],
        target=out["target"],
        projection=out["projection"],
    )
