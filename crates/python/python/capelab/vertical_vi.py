"""Differentially private variational inference over vertically partitioned data with MPC (seed
004; spec efpsn-vertical-dpvi Part B): parties hold different columns of the same individuals and
together fit a mixture model by DP-SGD whose per-example gradients are computed under additive
secret sharing, clipped jointly and noised in shares; only the noisy clipped sums are opened.
Anyone can then draw a synthetic twin of the joint table from the released posterior.

The public description of the table, ``parties``, says which party holds which columns and how
each is modelled: :func:`beta` (a continuous column with **public** bounds) or
:func:`categorical` (public labels). Bounds and labels must not come from the data.

>>> import numpy as np
>>> import capelab.vertical_vi as vvi
>>> rng = np.random.default_rng(0)
>>> data = {"age": rng.uniform(18, 90, 300), "smoker": rng.choice(["no", "yes"], 300),
...         "income": np.exp(rng.normal(10, 1, 300))}
>>> parties = {"hospital": {"age": vvi.beta(17, 91), "smoker": vvi.categorical(["no", "yes"])},
...            "bank": {"income": vvi.beta(100, 1e7, log=True)}}
>>> fit = vvi.fit(data, parties, components=3, batch=30, steps=20, seed=1)
>>> fit.privacy[0].viewer, fit.privacy[0].accountant
('outside analyst', 'PLD')
>>> header, rows, numeric = fit.synthetic_rows(5)       # fit.synthetic(5) gives a DataFrame
>>> header
['age', 'smoker', 'income']

CPS1988 and its two-party split: ``df, parties = vvi.cps1988("data/cps1988.csv")``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capelab, _check, _progress

__all__ = [
    "beta",
    "categorical",
    "cps1988",
    "cps1988_parties",
    "Guarantee",
    "VviResult",
    "fit",
]

Column = Dict[str, Any]
Parties = Mapping[str, Mapping[str, Column]]


def beta(lo: float, hi: float, *, log: bool = False) -> Column:
    """A continuous column rescaled from its public bounds [lo, hi] (after ln when ``log``) and
    modelled by a Beta; values outside are clamped to the bound."""
    a, b = _check.real("lo", lo), _check.real("hi", hi)
    if not a < b:
        raise ValueError(f"hi: the bounds [{a}, {b}] are not an interval (need lo < hi)")
    if log and a <= 0:
        raise ValueError(f"lo: a log column needs lo > 0, got {a}")
    return {"Beta": {"lo": a, "hi": b, "log": bool(log)}}


def categorical(labels: Sequence[Any]) -> Column:
    """A discrete column with public ``labels`` (values are compared as text), modelled by a
    Categorical."""
    ls = [str(label) for label in labels]
    if len(ls) < 2 or len(set(ls)) != len(ls):
        raise ValueError(f"labels: need at least 2 distinct labels, got {ls!r}")
    for label in ls:
        if "," in label or "\n" in label or label != label.strip():
            raise ValueError(f"labels: {label!r} may not contain commas, newlines or outer spaces")
    return {"Categorical": {"labels": ls}}


def _schema(parties: Parties) -> Tuple[str, List[List[str]]]:
    if not isinstance(parties, Mapping) or not parties:
        raise ValueError("parties: expected {party name: {column: beta(...) or categorical(...)}}")
    out, columns = [], []
    for name, cols in parties.items():
        if not isinstance(cols, Mapping) or not cols:
            raise ValueError(f"parties[{name!r}]: expected {{column: beta(...) or categorical(...)}}")
        features = []
        for col, kind in cols.items():
            if not (isinstance(kind, Mapping) and len(kind) == 1 and next(iter(kind)) in ("Beta", "Categorical")):
                raise ValueError(f"parties[{name!r}][{col!r}]: use capelab.vertical_vi.beta(...) or categorical(...)")
            features.append({"name": str(col), "kind": dict(kind)})
        out.append({"name": str(name), "features": features})
        columns.append([str(c) for c in cols])
    seen = [c for cs in columns for c in cs]
    if len(set(seen)) != len(seen):
        raise ValueError("parties: a column is listed under two parties")
    return json.dumps({"parties": out}), columns


def _column(data: Any, name: str) -> List[Any]:
    try:
        values = data[name]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"data: no column {name!r}") from None
    if hasattr(values, "tolist"):
        values = values.tolist()
    return list(values)


def _field(value: Any, column: str, row: int) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"data: column {column!r}, row {row}: {value} is not a finite number")
        return repr(value)
    if value is None:
        raise ValueError(f"data: column {column!r}, row {row}: missing value")
    text = str(value)
    if "," in text or "\n" in text:
        raise ValueError(f"data: column {column!r}, row {row}: {text!r} contains a comma or newline")
    return text


def _party_csvs(argument: str, data: Any, columns: List[List[str]]) -> List[str]:
    """Each party's columns as CSV text (numbers written round-trip exact) for the crate's reader."""
    texts = []
    rows = None
    for cols in columns:
        values = [_column(data, c) for c in cols]
        n = len(values[0])
        if rows is None:
            rows = n
        for c, v in zip(cols, values):
            if len(v) != rows:
                raise ValueError(f"{argument}: column {c!r} has {len(v)} rows, others {rows}")
        lines = [",".join(cols)]
        for r in range(n):
            lines.append(",".join(_field(v[r], c, r) for c, v in zip(cols, values)))
        texts.append("\n".join(lines) + "\n")
    if not rows:
        raise ValueError(f"{argument}: no rows")
    return texts


def cps1988_parties() -> Dict[str, Dict[str, Column]]:
    """CPS1988's public two-party schema (the CLI's and the browser's default split):
    "demographics" holds education (one label per year 0–18), experience (5-year bins),
    ethnicity, smsa and region; "financial" holds wage (a Beta on ln wage in [50, 20 000] $/week)
    and parttime."""
    schema = json.loads(_capelab.vvi_cps1988_schema())
    return {p["name"]: {f["name"]: f["kind"] for f in p["features"]} for p in schema["parties"]}


def cps1988(path: str = "data/cps1988.csv"):
    """CPS1988 (the file ``scripts/setup.sh`` writes) as one pandas DataFrame with education and
    experience turned into their public labels, and its :func:`cps1988_parties` schema. The fixed
    80/20 split (public seed 1988) is :func:`fit`'s default."""
    import io

    import pandas as pd

    with open(path, encoding="utf-8") as f:
        text = f.read()
    (a, b), _train, _test = _capelab.vvi_cps1988_split(text)
    demographics = pd.read_csv(io.StringIO(a), dtype=str)
    financial = pd.read_csv(io.StringIO(b), dtype=str)
    # Python's float() rounds correctly, so the values are the file's, as the CLI reads them.
    financial["wage"] = financial["wage"].map(float)
    return pd.concat([demographics, financial], axis=1), cps1988_parties()


@dataclass(frozen=True)
class Guarantee:
    """One player's (ε, δ) for the run."""

    #: "outside analyst", "a party", or "k colluding parties".
    viewer: str
    epsilon: float
    delta: float
    #: The accountant whose bound ε is (the tighter of "PLD" and "RDP").
    accountant: str
    epsilon_rdp: float
    epsilon_pld: float
    noise_multiplier: float
    sampling_rate: float
    compositions: int
    #: "AddRemove" or "ReplaceOne".
    adjacency: str
    #: True when fixed batches were accounted as Poisson (an approximation, labelled).
    approximate: bool


@dataclass(frozen=True)
class VviResult:
    mode: str
    parties: List[Dict[str, Any]]
    train_records: int
    test_records: int
    #: Test NLL per record at the posterior median: at step 0, once per epoch (or every
    #: ``eval_every`` steps) and at the end.
    test_nll: List[Dict[str, float]]
    final_test_nll: float
    #: ε of every player (analyst, a party, colluding parties).
    privacy: List[Guarantee]
    #: With fixed batches: the paper's replace-one adjacency, by RDP (no PLD exists for it).
    privacy_replace_one_fixed_batches: Optional[Dict[str, Any]]
    #: Per step: mean batch, seconds, MPC rounds and bytes each party sent (mode "mpc").
    per_step: Dict[str, Any]
    train_seconds: float
    settings: Dict[str, Any]
    posterior: Any = field(repr=False)

    def synthetic(self, rows: Optional[int] = None, *, seed: Optional[int] = None):
        """A synthetic twin of ``rows`` records (default: the training rows) drawn from the
        released posterior, as a pandas DataFrame (numbers as floats, labels as text). With no
        ``seed`` it uses the run's own stream, as ``cape vertical-vi --synthetic-out`` does."""
        header, table, numeric = self.synthetic_rows(rows, seed=seed)
        import pandas as pd

        columns = {}
        for j, (name, is_number) in enumerate(zip(header, numeric)):
            values = [r[j] for r in table]
            columns[name] = np.asarray([float(v) for v in values]) if is_number else values
        return pd.DataFrame(columns, columns=header)

    def synthetic_rows(self, rows: Optional[int] = None, *, seed: Optional[int] = None):
        """The twin without pandas: (header, rows of text fields, which columns are numbers)."""
        n = self.train_records if rows is None else _check.integer("rows", rows, 1)
        return self.posterior.sample(n, _check.seed("seed", seed))

    def to_dict(self) -> Dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "posterior"}
        d["privacy"] = [asdict(g) for g in self.privacy]
        return d


def fit(
    data: Any,
    parties: Parties,
    *,
    test: Any = None,
    test_fraction: float = 0.2,
    split_seed: int = 1988,
    mode: Literal["mpc", "fixed", "plain", "nonpartitioned"] = "fixed",
    sigma: float = 2.042,
    components: int = 20,
    clip: float = 1.0,
    batch: int = 100,
    sampling: Literal["poisson", "fixed"] = "poisson",
    steps: int = 1000,
    learning_rate: float = 0.01,
    eval_every: int = 0,
    delta: float = 1e-5,
    seed: Optional[int] = None,
    progress: _progress.ProgressArg = None,
) -> VviResult:
    """Fits the mixture model on ``data`` (a pandas DataFrame, or a mapping of column name to
    values) split into ``parties``' columns, rows aligned by position.

    Without ``test`` the rows are split by the public ``split_seed`` (80/20 by default, as the
    CLI splits CPS1988); with ``test`` (same columns) that is the test set. ``mode``: "mpc" (real
    secret sharing with a dealer, noise in shares), "fixed" (the same circuit in plaintext fixed
    point, the paper's main mode), "plain" (f64, one trusted noise source) or "nonpartitioned"
    (the joined-table baseline). ``sigma`` = 0 switches the noise off (not private). ``seed``
    None draws every random value from the operating system; a seed reproduces the run (and
    the CLI's with ``--seed``) but is not private against anyone who knows it."""
    schema, columns = _schema(parties)
    train_csv = _party_csvs("data", data, columns)
    test_csv = None if test is None else _party_csvs("test", test, columns)
    settings = dict(
        mode=_check.choice("mode", mode, ("mpc", "fixed", "plain", "nonpartitioned")),
        sigma=_check.non_negative("sigma", sigma),
        components=_check.integer("components", components, 1, 100_000),
        clip=_check.positive("clip", clip),
        batch=_check.integer("batch", batch, 1),
        sampling=_check.choice("sampling", sampling, ("poisson", "fixed")),
        steps=_check.integer("steps", steps, 1, 100_000_000),
        learning_rate=_check.positive("learning_rate", learning_rate),
        eval_every=_check.integer("eval_every", eval_every, 0),
        delta=_check.open_unit("delta", delta),
        seed=_check.seed("seed", seed),
        split_seed=_check.integer("split_seed", split_seed),
        test_fraction=_check.fraction("test_fraction", test_fraction),
    )
    if settings["mode"] == "mpc" and len(columns) < 2:
        raise ValueError("mode: 'mpc' needs at least 2 parties to secret-share")
    out = _capelab.vvi_fit(schema, train_csv, test_csv, settings, _progress.callback(progress, f"{mode} DP-VI step"))
    return VviResult(
        mode=out["mode"],
        parties=out["parties"],
        train_records=out["train_records"],
        test_records=out["test_records"],
        test_nll=out["test_nll"],
        final_test_nll=out["final_test_nll"],
        privacy=[
            Guarantee(
                viewer=g["viewer"],
                epsilon=g["epsilon"],
                delta=g["delta"],
                accountant=g["accountant"],
                epsilon_rdp=g["epsilon_rdp"],
                epsilon_pld=g["epsilon_pld"],
                noise_multiplier=g["noise_multiplier"],
                sampling_rate=g["sampling_rate"],
                compositions=g["compositions"],
                adjacency=g["adjacency"],
                approximate=g["approximate"],
            )
            for g in out["privacy"]
        ],
        privacy_replace_one_fixed_batches=out["privacy_replace_one_fixed_batches"],
        per_step=out["per_step"],
        train_seconds=out["train_seconds"],
        settings={k: out[k] for k in ("components", "gradient_dimension", "sigma", "clip", "sampling", "batch", "steps", "learning_rate", "seed")},
        posterior=out["posterior"],
    )
