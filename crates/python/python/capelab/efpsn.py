"""EFPSN (seed 003; spec efpsn-vertical-dpvi Part A): agents on a graph perturb their local costs
with zero-sum polynomial masks built by a Paillier-encrypted exchange among neighbours (Phase 1),
then optimise together by DSGD or gradient tracking (Phase 2), against the non-zero-sum baseline
(Nozari et al.) and the noise-free run. ε is Theorem IV.1's, as the paper claims it.

>>> import numpy as np
>>> from capelab import efpsn
>>> r = efpsn.run(agents=4, graph="ring", iterations=50, key_bits=1024, gamma=1.0)
>>> [run.method for run in r.runs]
['efpsn', 'baseline', 'noise-free']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple

import numpy as np

from . import _capelab, _check, _progress

__all__ = ["EfpsnRun", "EfpsnResult", "run"]


@dataclass(frozen=True)
class EfpsnRun:
    """One method's run."""

    method: str
    #: The last trace point: ‖x̄ − x*‖ (``deviation``), the test score (accuracy for softmax
    #: regression, RMSE for least squares) and max ‖x_i − x̄‖ (``disagreement``).
    final: Dict[str, float]
    #: Σ_i 10^P·η̄_ik for every k: exactly 0 for EFPSN's masks (None for the baseline).
    zero_sum_residual: Optional[List[float]]
    largest_mask_coefficient: float
    #: Phase 1's traffic (messages, bytes) as the relay would carry it.
    phase1: Dict[str, int]
    trace: List[Dict[str, float]]
    #: x̄, the agents' average at the end.
    x_bar: np.ndarray


@dataclass(frozen=True)
class EfpsnResult:
    parameters: int
    graph: Dict[str, Any]
    optimizer: str
    basis: Dict[str, Any]
    noise: Dict[str, Any]
    perturbed_variables: List[int]
    key_bits: int
    #: The centralised minimiser x* and its objective and score.
    x_star: np.ndarray
    x_star_objective: float
    x_star_score: float
    #: ε at δ by Theorem IV.1 (``accountant`` says so), with μ₂ and μ_max.
    epsilon: Dict[str, Any]
    runs: List[EfpsnRun]


def run(
    x: Optional[Any] = None,
    labels: Optional[Any] = None,
    *,
    agents: int = 5,
    graph: Literal["ring", "path", "star", "complete", "geometric"] = "ring",
    optimizer: Literal["dsgd", "tracking"] = "tracking",
    methods: Sequence[str] = ("efpsn", "baseline", "noise-free"),
    gamma: float = 1e3,
    decay: float = 1.0,
    precision: int = 6,
    basis: Tuple[int, Optional[int], Optional[int]] = (1, None, None),
    basis_seed: int = 0,
    perturb: Literal["biases", "all"] = "biases",
    iterations: int = 1000,
    step: float = 2.0,
    step_decay: float = 0.0,
    batch: int = 0,
    ridge: float = 1e-3,
    key_bits: Literal[1024, 2048] = 2048,
    delta: float = 1e-5,
    q: float = 2.0,
    sensitivity: float = 1.0,
    feature_bound: float = 16.0,
    test_fraction: float = 0.2,
    seed: int = 0,
    progress: _progress.ProgressArg = None,
) -> EfpsnResult:
    """EFPSN on softmax regression over the labelled rows ``x`` (N × d) with ``labels`` (class
    numbers 0, 1, …; features divided by the public ``feature_bound``), or without data on the
    generated least-squares problem. The defaults are ``cape efpsn``'s (digits: ring of 5 agents,
    gradient tracking, γ = 1e3, basis (K_deg, m, N_b) = (1, 10, 10) on the 10 class biases).
    ``basis`` m and N_b default to the number of perturbed variables. ``key_bits`` 1024 is for
    demos only (not a secure size)."""
    if (x is None) != (labels is None):
        raise ValueError("labels: give both x and labels, or neither (generated least squares)")
    a = lab = None
    if x is not None:
        a = _check.matrix("x", x)
        lab = _check.labels("labels", labels, a.shape[0])
        if lab.max() < 1:
            raise ValueError("labels: softmax regression needs at least 2 classes")
    if not isinstance(basis, (tuple, list)) or len(basis) != 3:
        raise ValueError(f"basis: expected (K_deg, m, N_b), got {basis!r}")
    if isinstance(methods, str):
        methods = (methods,)
    settings = dict(
        graph=_check.choice("graph", graph, ("ring", "path", "star", "complete", "geometric")),
        agents=_check.integer("agents", agents, 2, 10_000),
        optimizer=_check.choice("optimizer", optimizer, ("dsgd", "tracking")),
        decay=_check.non_negative("decay", decay),
        precision=_check.integer("precision", precision, 0, 12),
        basis=(
            _check.integer("basis", basis[0], 1, 64),
            _check.optional(_check.integer, "basis", basis[1], 1, 1_000_000),
            _check.optional(_check.integer, "basis", basis[2], 1, 1_000_000),
        ),
        basis_seed=_check.integer("basis_seed", basis_seed),
        perturb=_check.choice("perturb", perturb, ("biases", "all")),
        iterations=_check.integer("iterations", iterations, 1, 2**32 - 1),
        step=_check.positive("step", step),
        step_decay=_check.non_negative("step_decay", step_decay),
        batch=_check.integer("batch", batch, 0, 2**32 - 1),
        ridge=_check.non_negative("ridge", ridge),
        key_bits=_check.choice("key_bits", key_bits, (1024, 2048)),
        delta=_check.open_unit("delta", delta),
        q=_check.real("q", q),
        sensitivity=_check.positive("sensitivity", sensitivity),
        feature_bound=_check.positive("feature_bound", feature_bound),
        test_fraction=_check.fraction("test_fraction", test_fraction),
        gamma=_check.positive("gamma", gamma),
        methods=[_check.choice("methods", m, ("efpsn", "baseline", "noise-free")) for m in methods],
        seed=_check.integer("seed", seed),
    )
    if not (settings["q"] > 1 and 0.5 < settings["decay"] < settings["q"] - 0.5):
        raise ValueError(
            f"decay: Theorem IV.1 needs q > 1 and 1/2 < p < q − 1/2, got p = {settings['decay']}, "
            f"q = {settings['q']}"
        )
    if not settings["methods"]:
        raise ValueError("methods: name at least one of efpsn, baseline, noise-free")
    out = _capelab.efpsn_run(a, lab, settings, _progress.callback(progress, "EFPSN iteration"))
    return EfpsnResult(
        parameters=out["parameters"],
        graph=out["graph"],
        optimizer=out["optimizer"],
        basis=out["basis"],
        noise=out["noise"],
        perturbed_variables=out["perturbed_variables"],
        key_bits=out["key_bits"],
        x_star=np.asarray(out["x_star"], dtype=np.float64),
        x_star_objective=out["x_star_objective"],
        x_star_score=out["x_star_score"],
        epsilon=out["epsilon"],
        runs=[
            EfpsnRun(
                method=r["method"],
                final=r["final"],
                zero_sum_residual=r["zero_sum_residual"],
                largest_mask_coefficient=r["largest_mask_coefficient"],
                phase1=r["phase1"],
                trace=r["trace"],
                x_bar=np.asarray(r["x_bar"], dtype=np.float64),
            )
            for r in out["runs"]
        ],
    )
