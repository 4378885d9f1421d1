"""SecureAgg (Bonawitz et al. 2017, honest-but-curious; spec cape-secagg-pca-djica §3) and SecAgg+
(Bell et al. 2020: keys, shares and masks only within each site's neighbourhood of a Harary graph)
among in-process sites: the core's real protocol roles and messages on a deterministic simulator
with virtual time, scripted dropouts, and what every participant sent.

>>> import numpy as np
>>> from capelab import secagg
>>> r = secagg.simulate(np.ones((5, 3)), bound=2.0, seed=1, dropouts=[(4, "after_share_keys")])
>>> r.survivors, np.round(r.sum, 6).tolist()
([0, 1, 2, 3], [4.0, 4.0, 4.0])

Sites are numbered 0, 1, … in the order of the rows of ``inputs``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capelab, _check

__all__ = ["DROP_POINTS", "SiteCost", "Round", "simulate", "choose_harary"]

#: Where a scripted site vanishes, in protocol order: before sending anything; after its keys
#: (R0), its encrypted shares (R1) or its masked input (R2); on the unmask request without
#: answering; after its unmask shares (R3). From "after_masked_input" on, its input is in the sum.
DROP_POINTS = (
    "before_advertise",
    "after_advertise",
    "after_share_keys",
    "after_masked_input",
    "during_unmask",
    "after_unmask",
)

Dropout = Union[Tuple[int, str], Tuple[int, str, str]]


@dataclass(frozen=True)
class SiteCost:
    """What one site did and sent."""

    site: int
    #: Where the role stopped (e.g. "Done", "Excluded").
    phase: str
    #: The scripted drop point it vanished at, if any.
    vanished: Optional[str]
    #: Whether its input is in the sum.
    included: bool
    messages_sent: int
    bytes_sent: int
    #: Messages it refused (typed errors, never a crash).
    refusals: int
    #: Its input as encoded in fixed point (what the sum adds up exactly).
    quantised_input: Optional[List[float]]


@dataclass(frozen=True)
class Round:
    """One SecureAgg instance."""

    #: Σ of the surviving sites' quantised inputs (decoded), or None when the round aborted.
    sum: Optional[np.ndarray]
    #: Why the round aborted (fewer than t sites left, …), or None.
    error: Optional[str]
    #: U3: the sites whose input is in the sum.
    survivors: List[int]
    #: Who stopped answering, in which round and why.
    dropouts: List[Dict[str, Any]]
    sites: List[SiteCost]
    #: The Shamir threshold t (within each neighbourhood for SecAgg+).
    threshold: int
    #: Messages and payload bytes sent by everyone, and by the aggregator.
    messages: int
    bytes: int
    aggregator_messages_sent: int
    aggregator_bytes_sent: int
    #: Virtual time at the end (ms): a silent site costs one round deadline.
    finished_at_ms: int

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def simulate(
    inputs: Any,
    *,
    bound: float,
    frac_bits: int = 32,
    seed: Optional[int] = None,
    threshold: Optional[int] = None,
    harary_k: Optional[int] = None,
    graph_seed: int = 0,
    dropouts: Sequence[Dropout] = (),
    round_timeout_ms: int = 1000,
) -> Round:
    """One SecureAgg instance summing the rows of ``inputs`` (S × d; site s holds row s), each value
    encoded in fixed point with ``frac_bits`` fractional bits under the public bound
    ``|x| ≤ bound``.

    ``threshold`` is Shamir's t (default ⌊2S/3⌋ + 1; with SecAgg+ per neighbourhood of k + 1).
    ``harary_k`` (even, 2 ≤ k < S − 1) switches to SecAgg+ on the Harary graph H(S, k) over a
    permutation drawn from ``graph_seed``; :func:`choose_harary` picks (k, t) for a dropout and a
    corruption fraction. ``dropouts`` lists ``(site, point)`` or ``(site, point, mode)`` with a
    point of :data:`DROP_POINTS` and mode "disconnect" (default) or "silent" (the aggregator waits
    for its round deadline). ``seed`` None draws from the operating system."""
    x = _check.matrix("inputs", inputs)
    b = _check.positive("bound", bound)
    scripted = []
    for d in dropouts:
        if not isinstance(d, (tuple, list)) or len(d) not in (2, 3):
            raise ValueError(f"dropouts: {d!r} is not (site, point) or (site, point, mode)")
        site = _check.integer("dropouts", d[0], 0, x.shape[0] - 1)
        point = _check.choice("dropouts", d[1], DROP_POINTS)
        mode = _check.choice("dropouts", d[2] if len(d) == 3 else "disconnect", ("disconnect", "silent"))
        scripted.append((site, point, mode))
    s = _check.seed("seed", seed)
    r = _capelab.secagg_simulate(
        x,
        b,
        _check.integer("frac_bits", frac_bits, 1, 52),
        int.from_bytes(os.urandom(8), "little") if s is None else s,
        _check.optional(_check.integer, "threshold", threshold, 1),
        _check.optional(_check.integer, "harary_k", harary_k, 2),
        _check.integer("graph_seed", graph_seed),
        scripted,
        _check.integer("round_timeout_ms", round_timeout_ms, 1),
    )
    return Round(
        sum=None if r["sum"] is None else np.asarray(r["sum"], dtype=np.float64),
        error=r["error"],
        survivors=r["survivors"],
        dropouts=r["dropouts"],
        sites=[SiteCost(**c) for c in r["sites"]],
        threshold=r["threshold"],
        messages=r["messages"],
        bytes=r["bytes"],
        aggregator_messages_sent=r["aggregator_messages_sent"],
        aggregator_bytes_sent=r["aggregator_bytes_sent"],
        finished_at_ms=r["finished_at_ms"],
    )


def choose_harary(
    sites: int,
    dropout_fraction: float,
    corruption_fraction: float,
    *,
    sigma: float = 40.0,
) -> Dict[str, Any]:
    """SecAgg+'s smallest even degree k (and best threshold t) whose failure bound is at most
    2^-``sigma`` for ``sites`` sites, a fraction of them dropping out and a fraction colluding
    with the aggregator (as ``cape bench secagg --graph harary`` picks them). Returns ``k``,
    ``threshold``, ``dropouts``, ``corruptions`` and the bound's ``failure_log2``."""
    return _capelab.secagg_choose_harary(
        _check.integer("sites", sites, 1, 2**32),
        _check.real("dropout_fraction", dropout_fraction),
        _check.real("corruption_fraction", corruption_fraction),
        _check.positive("sigma", sigma),
    )
