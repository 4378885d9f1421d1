"""CAPE, Correlation Assisted Private Estimation (seed 000 §III; spec cape-secagg-pca-djica §2):
each site adds a zero-sum noise e_s, which cancels in the aggregate, and a small independent g_s,
so every message carries the full local variance τ² while the average carries only the pooled
mechanism's τ²/S².

- :func:`release_privacy`: Theorem 1 (with the spec's erratum) for one release, δ under the
  paper's adversary view and under the *full* view (the colluders' own noise subtracted, which
  the threat model hands the adversary: the guarantee), with δ_conv and δ_pool beside them.
- :func:`collusion_factor`: c_S under either view (μ_z = c_S/(2z²)).
- :func:`simulate_round`: one round of zero-sum noise draws and releases among the sites, through an ideal
  secure sum (a simulation; ``capelab.secagg`` runs the real SecureAgg), with dropouts.
- :func:`estimate`: the aggregator's estimate, refusing a broken zero sum (Remark 4).

Sites are numbered 0, 1, … in the order of the rows of ``values``.

>>> from capelab import cape
>>> p = cape.release_privacy(sites=4, noise_multiplier=10.0, epsilon=0.5)
>>> round(p.full_view.c_s, 4), p.delta > p.theorem1.delta
(1.8667, True)
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Literal, Optional, Sequence, Union

import numpy as np

from . import _capelab, _check


def _os_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")

__all__ = [
    "View",
    "ReleasePrivacy",
    "Round",
    "collusion_factor",
    "release_privacy",
    "classical_noise_multiplier",
    "simulate_round",
    "simulate_conventional_round",
    "estimate",
]


@dataclass(frozen=True)
class View:
    """One adversary view of a release: c_S, the privacy loss L ~ N(μ_z, σ_z²), and δ at ε by the
    exact tail 2Q((ε − μ_z)/σ_z) and by the paper's φ-bound (None where ε ≤ μ_z)."""

    c_s: float
    mu_z: float
    sigma_z: float
    delta: Optional[float]
    delta_phi_bound: Optional[float]


@dataclass(frozen=True)
class ReleasePrivacy:
    """Theorem 1 for one CAPE release at noise multiplier z = τ/Δ and ε."""

    sites: int
    colluders: int
    noise_multiplier: float
    epsilon: float
    #: The guarantee: the adversary also subtracts the colluders' own noise.
    full_view: View
    #: The paper's Theorem 1 view with the exact c_S (spec §2 erratum).
    theorem1: View
    #: c_S of the paper's eq. (1) as printed, and its φ-bound δ (None where undefined).
    paper_eq1_c_s: Optional[float]
    paper_eq1_delta_phi_bound: Optional[float]
    #: δ the conventional scheme / pooled data could claim at CAPE's accuracy (Appendix F).
    delta_conv: float
    delta_pool: float
    within_trust_model: bool

    @property
    def delta(self) -> Optional[float]:
        """δ under the full view: the guarantee."""
        return self.full_view.delta

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _collusion_args(sites, colluders, beyond_trust_model):
    s = _check.integer("sites", sites, 2, 2**32)
    c = None if colluders is None else _check.integer("colluders", colluders, 0, s - 1)
    return s, c, bool(beyond_trust_model)


def collusion_factor(
    sites: int,
    colluders: Optional[int] = None,
    *,
    view: Literal["full", "theorem1", "paper_eq1"] = "full",
    beyond_trust_model: bool = False,
) -> Optional[float]:
    """c_S = τ²[Σ⁻¹]₁₁ of one honest site's release among ``sites``, with ``colluders`` colluding
    (default ⌈S/3⌉ − 1, the most the trust model allows; more needs ``beyond_trust_model=True``).
    ``view``: "full" (the guarantee), "theorem1" (the paper's, exact), "paper_eq1" (as printed;
    None where its formula is undefined)."""
    s, c, beyond = _collusion_args(sites, colluders, beyond_trust_model)
    return _capelab.cape_collusion_factor(s, c, beyond, _check.choice("view", view, ("full", "theorem1", "paper_eq1")))


def release_privacy(
    sites: int,
    noise_multiplier: float,
    epsilon: float,
    *,
    colluders: Optional[int] = None,
    beyond_trust_model: bool = False,
) -> ReleasePrivacy:
    """δ at ``epsilon`` of one CAPE release with noise multiplier z = τ/Δ among ``sites`` sites
    (Theorem 1; ``cape mean`` reports the same numbers). Raises ValueError when ε is not above
    Theorem 1's μ_z: the loss then exceeds ε on average and no δ exists."""
    s, c, beyond = _collusion_args(sites, colluders, beyond_trust_model)
    r = _capelab.cape_release_privacy(
        s, c, beyond, _check.positive("noise_multiplier", noise_multiplier), _check.positive("epsilon", epsilon)
    )
    full = r["full_view"]
    return ReleasePrivacy(
        sites=r["sites"],
        colluders=r["colluders"],
        noise_multiplier=r["noise_multiplier"],
        epsilon=r["epsilon"],
        full_view=View(full["c_s"], full["loss"]["mu_z"], full["loss"]["sigma_z"], full["delta_tail"], full["delta_phi_bound"]),
        theorem1=View(r["c_s"], r["loss"]["mu_z"], r["loss"]["sigma_z"], r["delta_tail"], r["delta_phi_bound"]),
        paper_eq1_c_s=r["paper_eq1_c_s"],
        paper_eq1_delta_phi_bound=r["paper_eq1_delta_phi_bound"],
        delta_conv=r["delta_conv"],
        delta_pool=r["delta_pool"],
        within_trust_model=r["within_trust_model"],
    )


def classical_noise_multiplier(epsilon: float, delta: float) -> float:
    """z = c(δ)/ε with c(δ) = √(2 ln(1.25/δ)): the classical calibration τ = Δ·z the papers use
    (a guarantee of the classical mechanism only for ε < 1; CAPE's own δ is Theorem 1's)."""
    return _capelab.cape_classical_noise_multiplier(_check.positive("epsilon", epsilon), _check.open_unit("delta", delta))


@dataclass(frozen=True)
class Round:
    """One simulated CAPE round."""

    #: U: the sites whose noise entered the secure sum.
    contributors: List[int]
    #: The sites of U, in the order of the rows below.
    sites: List[int]
    #: ê_s as quantised for the secure sum (|U| × d).
    quantised_noise: np.ndarray
    #: e_s from Algorithm 1 (|U| × d): every column sums to exactly 0.
    zero_sum_noise: np.ndarray
    #: â_s = f(x_s) + e_s + g_s per site of U; None for a site that left after its noise entered.
    releases: List[Optional[np.ndarray]]
    #: The aggregator's estimate (the mean of the releases), or None when it refused.
    estimate: Optional[np.ndarray]
    #: Why the aggregator refused (a broken zero sum names the survivors to re-run with).
    refusal: Optional[str]
    #: The fixed-point format of the noise in the secure sum.
    frac_bits: int
    bound: float


def _values_and_sd(values, local_sd):
    v = _check.matrix("values", values)
    if np.isscalar(local_sd):
        sd = [_check.positive("local_sd", local_sd)] * v.shape[0]
    else:
        sd = [_check.positive(f"local_sd[{i}]", x) for i, x in enumerate(local_sd)]
        if len(sd) != v.shape[0]:
            raise ValueError(f"local_sd: {len(sd)} values for {v.shape[0]} sites (rows of values)")
    return v, sd


def _sites(argument: str, sites: Sequence[int], count: int) -> List[int]:
    out = [_check.integer(argument, s, 0, count - 1) for s in sites]
    if len(set(out)) != len(out):
        raise ValueError(f"{argument}: a site is listed twice")
    return out


def simulate_round(
    values: Any,
    local_sd: Union[float, Sequence[float]],
    *,
    seed: Optional[int] = None,
    round: int = 0,
    drop_before_noise: Sequence[int] = (),
    drop_after_noise: Sequence[int] = (),
) -> Round:
    """One CAPE round (Algorithms 1 and 2) among the sites holding the rows of ``values`` (S × d),
    each with local noise τ_s = ``local_sd`` (one number, or one per site), through an ideal
    secure sum. Sites in ``drop_before_noise`` leave before their noise enters the sum (the round
    goes on with |U| = S − those); sites in ``drop_after_noise`` leave after, which breaks the
    zero sum: the aggregator then refuses (``refusal``). ``seed`` None draws from the OS."""
    v, sd = _values_and_sd(values, local_sd)
    if v.shape[0] < 2:
        raise ValueError(f"values: CAPE needs at least 2 sites (rows), got {v.shape[0]}")
    before = _sites("drop_before_noise", drop_before_noise, v.shape[0])
    after = _sites("drop_after_noise", drop_after_noise, v.shape[0])
    if len(before) >= v.shape[0]:
        raise ValueError("drop_before_noise: every site left before the noise sum")
    s = _check.seed("seed", seed)
    if s is None:
        s = _os_seed()
    r = _capelab.cape_round(v, sd, s, _check.integer("round", round), before, after)
    return Round(
        contributors=r["contributors"],
        sites=r["sites"],
        quantised_noise=np.asarray(r["quantised_noise"], dtype=np.float64),
        zero_sum_noise=np.asarray(r["zero_sum_noise"], dtype=np.float64),
        releases=[None if x is None else np.asarray(x, dtype=np.float64) for x in r["releases"]],
        estimate=None if r["estimate"] is None else np.asarray(r["estimate"], dtype=np.float64),
        refusal=r["refusal"],
        frac_bits=r["frac_bits"],
        bound=r["bound"],
    )


def simulate_conventional_round(
    values: Any,
    local_sd: Union[float, Sequence[float]],
    *,
    seed: Optional[int] = None,
    round: int = 0,
) -> Dict[str, np.ndarray]:
    """The baseline: every site releases its row plus independent N(0, τ_s²); the estimate is the
    mean (variance τ²/S, S times CAPE's). Returns ``{"releases": (S × d), "estimate": (d,)}``."""
    v, sd = _values_and_sd(values, local_sd)
    s = _check.seed("seed", seed)
    if s is None:
        s = _os_seed()
    r = _capelab.cape_conventional_round(v, sd, s, _check.integer("round", round))
    return {k: np.asarray(x, dtype=np.float64) for k, x in r.items()}


def estimate(releases: Any, senders: Sequence[int], contributors: Sequence[int]) -> np.ndarray:
    """Algorithm 2's aggregator: the mean of ``releases`` (one row per sender), if every site of
    ``contributors`` (U, whose noise entered the sum) released; otherwise ValueError naming the
    missing sites and the survivors to re-run the round with (Remark 4)."""
    r = _check.matrix("releases", releases)
    snd = [_check.integer("senders", s, 0, 2**31) for s in senders]
    con = [_check.integer("contributors", s, 0, 2**31) for s in contributors]
    if len(snd) != r.shape[0]:
        raise ValueError(f"senders: {len(snd)} senders for {r.shape[0]} releases (one per row)")
    return np.asarray(_capelab.cape_estimate(r, snd, con), dtype=np.float64)

