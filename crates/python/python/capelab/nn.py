"""A two-layer network trained across sites by full-batch gradient descent (seed 002 §5.1; spec
cape-fm §5): each iteration every site releases its clipped mean gradient with CAPE noise (or
independent noise, the conventional scheme, or none), and every iteration is accounted.

>>> from capelab import nn
>>> d = nn.synthetic(samples=600, features=10, seed=0)
>>> r = nn.train(d, mechanism="cape", epsilon=0.5, iterations=20, seed=0)
>>> 0 <= r.accuracy <= 1 and r.accountant.startswith("PLD")
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Literal, Optional, Tuple

import numpy as np

from . import _capelab, _check
from .fm import Data, normalise

__all__ = ["NnResult", "synthetic", "normalise", "train"]


def synthetic(*, samples: int = 10_000, features: int = 50, seed: int = 0) -> Data:
    """``cape nn --data synthetic``: two Gaussian classes (means ±0.25) clipped to a public
    radius, ``samples`` records in all split 70/30."""
    n = _check.integer("samples", samples, 4)
    train = _check.round_half_away((1 - 0.3) * n)
    out = _capelab.data_synthetic("binary", n, train, _check.integer("features", features, 1), _check.integer("seed", seed))
    return Data(out["x_train"], out["y_train"], out["x_test"], out["y_test"], None, out["normalisation"])


@dataclass(frozen=True)
class NnResult:
    mechanism: str
    #: Test and training accuracy and the final training loss.
    accuracy: float
    train_accuracy: float
    train_loss: float
    #: ε of the whole run at ``delta`` in the guarantee view (None when not private).
    epsilon: Optional[float]
    delta: float
    #: Which accountant made ε: "PLD" (T unsampled Gaussian releases compose exactly, no grid).
    accountant: str
    guarantee_view: Optional[str]
    #: ε of each iteration's release (calibrated when ``target_epsilon`` was given).
    epsilon_per_iteration: float
    #: Every view's ε (exact and RDP), the calibration, Theorem 1 per iteration.
    privacy: Optional[Dict[str, Any]]
    #: (iteration, training loss) every T/20 iterations.
    loss_history: List[Tuple[int, float]]
    site_noise_sd: Optional[float]
    aggregate_noise_sd: Optional[float]
    #: The mean share of per-example gradients that hit the clipping norm.
    clipped_share: float
    records_used: int
    #: The trained network's flat parameters.
    params: np.ndarray

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params.tolist()
        return d


def train(
    data: Data,
    *,
    mechanism: Literal["cape", "conventional", "nonprivate"] = "cape",
    epsilon: float = 0.5,
    target_epsilon: Optional[float] = None,
    delta: float = 1e-2,
    sites: int = 4,
    colluders: Optional[int] = None,
    hidden: int = 5,
    iterations: int = 200,
    learning_rate: float = 0.01,
    clip: float = 1.0,
    calibration: Literal["classical-analytic", "classical-paper", "analytic"] = "classical-analytic",
    seed: int = 0,
) -> NnResult:
    """Trains on ``data.x_train`` (rows with ‖x‖ ≤ 1, labels 0/1) split over ``sites`` and tests on
    ``data.x_test``. ``epsilon`` is each iteration's ε (the papers' x axis); ``target_epsilon``
    instead calibrates it so the whole run is (target, ``delta``)-DP in its guarantee view (PLD,
    analytic Gaussian calibration). The defaults are ``cape nn``'s."""
    x = _check.matrix("data.x_train", data.x_train)
    y = _check.vector("data.y_train", data.y_train, x.shape[0])
    xt = _check.matrix("data.x_test", data.x_test, cols=x.shape[1])
    yt = _check.vector("data.y_test", data.y_test, xt.shape[0])
    for name, labels in (("data.y_train", y), ("data.y_test", yt)):
        if not np.isin(labels, (0.0, 1.0)).all():
            raise ValueError(f"{name}: labels must be 0 or 1")
    for name, a in (("data.x_train", x), ("data.x_test", xt)):
        norms = np.sqrt(np.einsum("ij,ij->i", a, a))
        if norms.max() > 1 + 1e-9:
            raise ValueError(f"{name}: row {int(np.argmax(norms))} has norm {norms.max():.6g} > 1 (see capelab.nn.normalise)")
    m = _check.choice("mechanism", mechanism, ("cape", "conventional", "nonprivate"))
    s = _check.integer("sites", sites, 1)
    if s > x.shape[0]:
        raise ValueError(f"sites: {s} sites for {x.shape[0]} training rows")
    if m == "cape" and s < 2:
        raise ValueError("sites: CAPE needs at least 2 sites")
    if target_epsilon is not None and m == "nonprivate":
        raise ValueError("target_epsilon: a non-private run has no guarantee to calibrate")
    settings = dict(
        mechanism=m,
        epsilon=_check.positive("epsilon", epsilon),
        target_epsilon=_check.optional(_check.positive, "target_epsilon", target_epsilon),
        delta=_check.open_unit("delta", delta),
        sites=s,
        colluders=_check.optional(_check.integer, "colluders", colluders, 0, max(s - 1, 0)),
        hidden=_check.integer("hidden", hidden, 1, 100_000),
        iterations=_check.integer("iterations", iterations, 1, 10_000_000),
        learning_rate=_check.positive("learning_rate", learning_rate),
        clip=_check.positive("clip", clip),
        calibration=_check.choice("calibration", calibration, ("classical-analytic", "classical-paper", "analytic")),
        seed=_check.integer("seed", seed),
    )
    r = _capelab.nn_train(x, y, xt, yt, settings)
    p = r["privacy"]
    return NnResult(
        mechanism=r["mechanism"],
        accuracy=r["test_accuracy"],
        train_accuracy=r["train_accuracy"],
        train_loss=r["train_loss"],
        epsilon=None if p is None else p["epsilon"],
        delta=settings["delta"],
        accountant="none (not private)" if p is None else "PLD",
        guarantee_view=None if p is None else p["guarantee_view"],
        epsilon_per_iteration=r["epsilon_per_iteration"],
        privacy=p,
        loss_history=[tuple(x) for x in r["loss_history"]],
        site_noise_sd=r["site_noise_sd"],
        aggregate_noise_sd=r["aggregate_noise_sd"],
        clipped_share=r["clipped_share"],
        records_used=r["records_used"],
        params=np.asarray(r["final_params"], dtype=np.float64),
    )
