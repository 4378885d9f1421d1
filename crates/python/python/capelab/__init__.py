"""capelab: correlated-noise private computation across sites, from Python.

The Rust core of capelab (the same code the `cape` CLI and the browser app run) on numpy arrays
and pandas DataFrames:

- :mod:`capelab.accountant`: ε and δ under RDP and PLD, calibration, the site ledger.
- :mod:`capelab.cape`: CAPE's privacy (c_S, δ under both adversary views), zero-sum noise rounds,
  the estimator.
- :mod:`capelab.secagg`: SecureAgg and SecAgg+ rounds with dropouts, and what they cost.
- :mod:`capelab.djica`: capePCA + capeDJICA on one array per site.
- :mod:`capelab.fm`, :mod:`capelab.nn`, :mod:`capelab.efpsn`: private regression, the CAPE
  network, EFPSN.
- :mod:`capelab.vertical_vi`: DP variational inference over vertically partitioned data, the
  synthetic twin, ε per player.

Bad arguments raise ValueError naming the argument before any work; long work releases the GIL
and takes a ``progress`` callback; every run takes a ``seed``.
"""

from . import accountant, cape, djica, efpsn, fm, nn, secagg, vertical_vi
from ._capelab import __version__

__all__ = [
    "__version__",
    "accountant",
    "cape",
    "djica",
    "efpsn",
    "fm",
    "nn",
    "secagg",
    "vertical_vi",
]
