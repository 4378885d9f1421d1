"""Private linear and logistic regression with the functional mechanism (seed 001; seed 002's
capeFM; spec cape-fm): the Gaussian, Laplace and relaxed FM, output perturbation, capeFM across
sites with CAPE noise, its conventional and local baselines, and the non-private fit.

FM's sensitivities hold on its domain only: every row ‖x‖ ≤ 1, regression targets in [−1, 1],
class labels 0/1. :func:`normalise` maps raw data there from *public* bounds (or, not privately,
from the data as the papers do); :func:`synthetic` makes ``cape fm``'s synthetic data.

>>> from capelab import fm
>>> d = fm.synthetic(samples=2000, features=5, seed=0)
>>> r = fm.fit(d.x_train, d.y_train, mechanism="cape", epsilon=1.0, seed=0)
>>> r.weights.shape, r.guarantee["kind"]
((5,), 'approximate')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple

import numpy as np

from . import _capelab, _check

__all__ = ["MECHANISMS", "Data", "FmResult", "synthetic", "normalise", "fit", "evaluate"]

MECHANISMS = ("gaussian", "laplace", "relaxed", "output", "cape", "conventional", "local", "nonprivate")


@dataclass(frozen=True)
class Data:
    """A train/test split in FM's domain."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    #: The true weights (synthetic regression only).
    w_star: Optional[np.ndarray]
    #: How the data were normalised, whether that is private, and a warning if it is not.
    normalisation: Dict[str, Any]


def synthetic(
    *,
    model: Literal["linear", "logistic"] = "linear",
    samples: int = 10_000,
    features: int = 20,
    seed: int = 0,
) -> Data:
    """``cape fm --data synthetic``: ``samples`` training records plus N/9 test records (90:10).
    Linear: spec §6.1's recipe, already in the domain, with its true w*; logistic: two Gaussian
    classes (means ±0.25) clipped to a public radius."""
    n = _check.integer("samples", samples, 4)
    f = _check.integer("features", features, 1)
    test = _check.round_half_away(n * 0.1 / (1 - 0.1))
    return _data(_capelab.data_synthetic(
        "regression" if _check.choice("model", model, ("linear", "logistic")) == "linear" else "binary",
        n + test, n, f, _check.integer("seed", seed),
    ))


def _data(out: Dict[str, Any]) -> Data:
    return Data(out["x_train"], out["y_train"], out["x_test"], out["y_test"], out.get("w_star"), out["normalisation"])


def _xy(x_name, x, y_name, y):
    a = _check.matrix(x_name, x)
    b = _check.vector(y_name, y, a.shape[0])
    return a, b


def normalise(
    x_train: Any,
    y_train: Any,
    x_test: Any,
    y_test: Any,
    *,
    task: Literal["regression", "binary"],
    bounds: Optional[Sequence[Tuple[float, float]]] = None,
    target_bounds: Optional[Tuple[float, float]] = None,
    data_dependent: bool = False,
) -> Data:
    """Into FM's domain: feature d from its public [lo, hi] onto [−1, 1] (clipped), each row
    divided by √D; a regression target from ``target_bounds`` onto [−1, 1]; binary labels must
    already be 0/1. ``data_dependent=True`` instead scales by the training data themselves (the
    papers' recipe): **not private**, and the result says so."""
    xt, yt = _xy("x_train", x_train, "y_train", y_train)
    xs, ys = _xy("x_test", x_test, "y_test", y_test)
    if xs.shape[1] != xt.shape[1]:
        raise ValueError(f"x_test: {xs.shape[1]} features, x_train has {xt.shape[1]}")
    fb = None
    if bounds is not None:
        fb = [(_check.real(f"bounds[{i}]", lo), _check.real(f"bounds[{i}]", hi)) for i, (lo, hi) in enumerate(bounds)]
        if len(fb) != xt.shape[1]:
            raise ValueError(f"bounds: {len(fb)} (lo, hi) pairs for {xt.shape[1]} features")
    tb = None
    if target_bounds is not None:
        tb = (_check.real("target_bounds", target_bounds[0]), _check.real("target_bounds", target_bounds[1]))
    return _data(_capelab.data_normalise(
        xt, yt, xs, ys, _check.choice("task", task, ("regression", "binary")), fb, tb, bool(data_dependent)
    ))


@dataclass(frozen=True)
class FmResult:
    """A fitted ŵ with the guarantee its release really has."""

    weights: np.ndarray
    #: The (ε, δ) guaranteed for the joint release of the blocks (``guarantee["epsilon"]``),
    #: how it was derived, CAPE's views, and warnings (e.g. the papers' per-block calibration).
    guarantee: Dict[str, Any]
    epsilon: float
    delta: float
    #: How ε was obtained, in words (the calibration and the composition of the blocks).
    accountant: str
    #: The noise on each released block.
    noise: List[Dict[str, Any]]
    #: What the minimiser did (eigenvalue floor, trimmed directions), for the FM mechanisms.
    minimiser: Optional[Dict[str, Any]]
    #: Training records that entered the fit (the distributed mechanisms drop N mod S).
    records_used: int
    output_noise_scale: Optional[float]

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["weights"] = self.weights.tolist()
        return d


def fit(
    x: Any,
    y: Any,
    *,
    model: Literal["linear", "logistic"] = "linear",
    mechanism: str = "gaussian",
    epsilon: float = 0.5,
    delta: float = 1e-5,
    sites: int = 5,
    colluders: Optional[int] = None,
    calibration: Literal["classical-analytic", "classical-paper", "analytic"] = "classical-analytic",
    strict: bool = False,
    release_constant: bool = True,
    floor: Optional[float] = None,
    floor_noise_multiple: float = 2.0,
    ridge: float = 0.0,
    ball: Optional[float] = None,
    box: Optional[float] = None,
    output_radius: float = 1.0,
    seed: int = 0,
) -> FmResult:
    """Fits ŵ on (``x``, ``y``) in FM's domain with ``mechanism`` (one of :data:`MECHANISMS`;
    "cape", "conventional" and "local" split the rows over ``sites``), at ``epsilon`` (per site
    for the distributed ones) and ``delta``. The defaults are ``cape fm``'s; ``strict=True``
    calibrates the joint release of the blocks rather than each block as the papers do."""
    a, b = _xy("x", x, "y", y)
    m = _check.choice("model", model, ("linear", "logistic"))
    if m == "logistic" and not np.isin(b, (0.0, 1.0)).all():
        raise ValueError("y: logistic regression needs labels 0 or 1")
    if m == "linear" and np.abs(b).max() > 1:
        raise ValueError("y: linear regression needs targets in [-1, 1] (see capelab.fm.normalise)")
    norms = np.sqrt(np.einsum("ij,ij->i", a, a))
    if norms.max() > 1 + 1e-9:
        raise ValueError(
            f"x: row {int(np.argmax(norms))} has norm {norms.max():.6g} > 1; FM needs every ‖x‖ ≤ 1 "
            f"(see capelab.fm.normalise)"
        )
    mech = _check.choice("mechanism", mechanism, MECHANISMS)
    s = _check.integer("sites", sites, 1)
    if mech in ("cape", "conventional", "local") and s > a.shape[0]:
        raise ValueError(f"sites: {s} sites for {a.shape[0]} rows")
    if mech == "cape" and s < 2:
        raise ValueError("sites: CAPE needs at least 2 sites")
    settings = dict(
        model=m,
        mechanism=mech,
        epsilon=_check.positive("epsilon", epsilon),
        delta=_check.open_unit("delta", delta),
        sites=s,
        colluders=_check.optional(_check.integer, "colluders", colluders, 0, max(s - 1, 0)),
        calibration=_check.choice("calibration", calibration, ("classical-analytic", "classical-paper", "analytic")),
        strict=bool(strict),
        release_constant=bool(release_constant),
        floor=_check.optional(_check.non_negative, "floor", floor),
        floor_noise_multiple=_check.non_negative("floor_noise_multiple", floor_noise_multiple),
        ridge=_check.non_negative("ridge", ridge),
        ball=_check.optional(_check.positive, "ball", ball),
        box_half_width=_check.optional(_check.positive, "box", box),
        output_radius=_check.positive("output_radius", output_radius),
        seed=_check.integer("seed", seed),
    )
    r = _capelab.fm_fit(a, b, settings)
    g = r["guarantee"]
    return FmResult(
        weights=np.asarray(r["weights"], dtype=np.float64),
        guarantee=g,
        epsilon=g["epsilon"],
        delta=g["delta"],
        accountant=g["how"],
        noise=r["noise"],
        minimiser=r["minimiser"],
        records_used=r["records_used"],
        output_noise_scale=r["output_noise_scale"],
    )


def evaluate(
    w: Any,
    data: Data,
    *,
    model: Literal["linear", "logistic"] = "linear",
) -> Dict[str, Optional[float]]:
    """Test MSE (linear) or test and training accuracy (logistic), the training loss, and
    ‖w* − ŵ‖/D when the true weights are known."""
    v = _check.vector("w", w)
    return _capelab.fm_evaluate(
        _check.choice("model", model, ("linear", "logistic")),
        v,
        _check.matrix("data.x_train", data.x_train, cols=v.shape[0]),
        _check.vector("data.y_train", data.y_train),
        _check.matrix("data.x_test", data.x_test, cols=v.shape[0]),
        _check.vector("data.y_test", data.y_test),
        None if data.w_star is None else _check.vector("data.w_star", data.w_star, v.shape[0]),
    )
