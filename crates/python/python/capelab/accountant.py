"""Privacy accounting: ε (or δ) of Gaussian and Poisson-subsampled Gaussian releases under RDP and
PLD, calibration of the noise to a target, `cape account`'s whole comparison, and a site's privacy
ledger (the browser's JSON).

Every answer names the accountant that made it: ``"PLD"`` (privacy loss distributions, as Google's
dp-accounting ``PLDAccountant``; exact for unsampled Gaussian releases, an upper bound on a grid of
step ``pld_interval`` otherwise) or ``"RDP"`` (Rényi DP with Balle et al. 2020's conversion).

>>> from capelab import accountant
>>> e = accountant.epsilon(2.042, 20_000, 1e-5, sampling_rate=100 / 30162)
>>> round(e.epsilon, 3), e.accountant
(0.909, 'PLD')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Literal, Optional

from . import _capelab, _check

__all__ = [
    "DEFAULT_PLD_INTERVAL",
    "Epsilon",
    "Calibration",
    "epsilon",
    "delta",
    "calibrate",
    "compare",
    "Ledger",
    "InsufficientBudget",
]

#: dp-accounting's default PLD grid step (nats); the error it adds to ε stays under 1e-3.
DEFAULT_PLD_INTERVAL = 1e-4

#: A site's privacy ledger: every release, the running total (the tighter of RDP and PLD, and which
#: one it is) and the budget; refuses a release over budget (``InsufficientBudget``) before it is
#: made. ``Ledger.from_json`` / ``to_json`` read and write the browser's ledger files.
Ledger = _capelab.Ledger

#: Raised by ``Ledger.spend_gaussian`` / ``spend_approximate`` when a release would take the total
#: over the budget; nothing is recorded.
InsufficientBudget = _capelab.InsufficientBudget

Accountant = Literal["pld", "rdp"]


@dataclass(frozen=True)
class Epsilon:
    """An (ε, δ) guarantee and the accountant that made it."""

    epsilon: float
    delta: float
    #: "PLD" or "RDP".
    accountant: str
    #: PLD: the composition was exact (unsampled Gaussians); RDP: the order was optimised over all
    #: real orders rather than a grid.
    exact: bool
    #: RDP: the optimal order α (None for PLD, or when δ was asked for).
    order: Optional[float] = None
    #: PLD: the grid step, None when exact.
    interval: Optional[float] = None

    def __float__(self) -> float:
        return self.epsilon

    def __str__(self) -> str:
        if self.accountant == "PLD":
            how = "exact" if self.interval is None else f"grid step {self.interval:g}"
        else:
            how = "Balle et al. 2020 conversion" + (
                f", α = {self.order:.3f}" if self.order is not None else ""
            )
        return f"ε = {self.epsilon:.4f} at δ = {self.delta:g} ({self.accountant}, {how})"

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """The smallest noise multiplier z meeting a target ε, and the ε it achieves (≤ the target)."""

    noise_multiplier: float
    epsilon: float
    #: "PLD" or "RDP".
    accountant: str

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _release(noise_multiplier, compositions, sampling_rate, collusion_factor, accountant, pld_interval):
    return (
        _check.positive("noise_multiplier", noise_multiplier),
        _check.integer("compositions", compositions, 1),
        _check.optional(_check.rate, "sampling_rate", sampling_rate),
        _check.optional(_collusion, "collusion_factor", collusion_factor),
        _check.choice("accountant", accountant, ("pld", "rdp")),
        _interval(pld_interval),
    )


def _collusion(argument: str, value: Any) -> float:
    c = _check.real(argument, value)
    if c < 1:
        raise ValueError(f"{argument}: c_S = {c} must be at least 1 (pass c_S, not 1/c_S)")
    return c


def _interval(value: Any) -> float:
    h = _check.positive("pld_interval", value)
    if h > 1e-2:
        raise ValueError(f"pld_interval: {h} must be at most 0.01 (the default 1e-4 keeps ε within 1e-3)")
    return h


def epsilon(
    noise_multiplier: float,
    compositions: int,
    delta: float,
    *,
    sampling_rate: Optional[float] = None,
    collusion_factor: Optional[float] = None,
    accountant: Accountant = "pld",
    pld_interval: float = DEFAULT_PLD_INTERVAL,
) -> Epsilon:
    """ε at ``delta`` of ``compositions`` Gaussian releases with noise multiplier z = σ/Δ.

    ``sampling_rate`` q makes each release Poisson-subsampled (DP-SGD, add/remove neighbours);
    ``collusion_factor`` c_S ≥ 1 accounts CAPE's colluding-adversary view (multiplier z/√c_S).
    ``accountant`` is ``"pld"`` (the tightest upper bound) or ``"rdp"``.
    """
    args = _release(noise_multiplier, compositions, sampling_rate, collusion_factor, accountant, pld_interval)
    d = _check.open_unit("delta", delta)
    r = _capelab.account_one(*args, delta=d)
    return Epsilon(r["epsilon"], r["delta"], r["accountant"], r["exact"], r["order"], r["interval"])


def delta(
    noise_multiplier: float,
    compositions: int,
    epsilon: float,
    *,
    sampling_rate: Optional[float] = None,
    collusion_factor: Optional[float] = None,
    accountant: Accountant = "pld",
    pld_interval: float = DEFAULT_PLD_INTERVAL,
) -> Epsilon:
    """The smallest δ certified at ``epsilon`` for the same releases as :func:`epsilon`."""
    args = _release(noise_multiplier, compositions, sampling_rate, collusion_factor, accountant, pld_interval)
    e = _check.non_negative("epsilon", epsilon)
    r = _capelab.account_one(*args, epsilon=e)
    return Epsilon(r["epsilon"], r["delta"], r["accountant"], r["exact"], r["order"], r["interval"])


def calibrate(
    target_epsilon: float,
    delta: float,
    compositions: int,
    *,
    sampling_rate: Optional[float] = None,
    accountant: Accountant = "pld",
    pld_interval: float = DEFAULT_PLD_INTERVAL,
) -> Calibration:
    """The smallest noise multiplier z (to a relative 1e-4, rounded up) with which
    ``compositions`` releases meet ``target_epsilon`` at ``delta`` under ``accountant``."""
    r = _capelab.calibrate(
        _check.positive("target_epsilon", target_epsilon),
        _check.open_unit("delta", delta),
        _check.integer("compositions", compositions, 1),
        _check.optional(_check.rate, "sampling_rate", sampling_rate),
        _check.choice("accountant", accountant, ("pld", "rdp")),
        _interval(pld_interval),
    )
    return Calibration(r["noise_multiplier"], r["epsilon"], r["accountant"])


def compare(
    noise_multiplier: float,
    compositions: int,
    delta: float,
    *,
    sampling_rate: Optional[float] = None,
    collusion_factor: Optional[float] = None,
    orders: Optional[List[float]] = None,
    curve: bool = False,
    accountant: Literal["rdp", "pld", "all"] = "all",
    target_epsilon: Optional[float] = None,
    pld_interval: float = DEFAULT_PLD_INTERVAL,
) -> Dict[str, Any]:
    """Every accounting of one homogeneous run, as ``cape account --json`` prints it: RDP (both
    conversions, exact optimum and order grid), the exact Gaussian curve, the moments accountant,
    basic and strong composition, and PLD (key ``"pld"``), for the aggregator's view and, with
    ``collusion_factor``, the collusion-aware view; with ``target_epsilon``, the noise each
    accountant needs (key ``"calibration"``)."""
    if orders is not None:
        orders = [_check.real("orders", a) for a in orders]
        if not orders:
            raise ValueError("orders: the list is empty; give at least one order α > 1")
        bad = [a for a in orders if a <= 1]
        if bad:
            raise ValueError(f"orders: α = {bad[0]} must be greater than 1")
    return _capelab.compare(
        _check.positive("noise_multiplier", noise_multiplier),
        _check.integer("compositions", compositions, 1),
        _check.open_unit("delta", delta),
        _check.optional(_check.rate, "sampling_rate", sampling_rate),
        _check.optional(_collusion, "collusion_factor", collusion_factor),
        orders,
        bool(curve),
        _check.choice("accountant", accountant, ("rdp", "pld", "all")),
        _check.optional(_check.positive, "target_epsilon", target_epsilon),
        _interval(pld_interval),
    )
