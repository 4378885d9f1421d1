"""capelab.efpsn and capelab.vertical_vi: `cape efpsn` and `cape vertical-vi`'s numbers for the
same data and seed (twin included), DataFrames and numpy columns in, checks on the table."""

from __future__ import annotations

import numpy as np
import pytest

from capelab import efpsn
from capelab import vertical_vi as vvi


def labelled(path):
    lines = [l for l in path.read_text().splitlines() if l.strip() and not l.startswith("#")]
    header = lines[0].split(",")
    rows = np.array([[float(v) for v in l.split(",")] for l in lines[1:]])
    t = header.index("target")
    return np.delete(rows, t, axis=1), rows[:, t].astype(np.int64)


def test_efpsn_equals_cape_efpsn_on_digits(cli, data_dir):
    expected = cli("efpsn", "--agents", 4, "--iterations", 40, "--key-bits", 1024, "--gamma", 10, "--seed", 2,
                   "--data", data_dir / "digits.csv", "--json")
    x, labels = labelled(data_dir / "digits.csv")
    r = efpsn.run(x, labels, agents=4, iterations=40, key_bits=1024, gamma=10.0, seed=2)
    assert r.parameters == expected["parameters"] and r.basis == expected["basis"]
    assert r.x_star_score == expected["x_star_score"]
    assert r.epsilon["epsilon"] == expected["epsilon"]["epsilon"] and "Theorem IV.1" in r.epsilon["accountant"]
    for ours, theirs in zip(r.runs, expected["runs"], strict=True):
        assert ours.method == theirs["method"]
        assert ours.final == theirs["final"] and ours.trace == theirs["trace"]
        assert ours.phase1 == {k: theirs["phase1"][k] for k in ("messages", "bytes")}
    zero_sum = r.runs[0].zero_sum_residual
    assert r.runs[0].method == "efpsn" and zero_sum and all(v == 0 for v in zero_sum)


def test_efpsn_least_squares_without_data(cli):
    expected = cli("efpsn", "--model", "least-squares", "--agents", 3, "--iterations", 30, "--key-bits", 1024,
                   "--method", "baseline", "--seed", 1, "--json")
    r = efpsn.run(agents=3, iterations=30, key_bits=1024, methods=["baseline"], seed=1)
    assert r.runs[0].final == expected["runs"][0]["final"]


def test_vertical_vi_equals_cape_vertical_vi_on_cps1988(cli, data_dir, tmp_path):
    twin_path = tmp_path / "twin.csv"
    expected = cli("vertical-vi", "--data", "cps1988", "--steps", 30, "--seed", 3, "--json",
                   "--synthetic-out", twin_path, "--rows", 50)
    df, parties = vvi.cps1988(data_dir / "cps1988.csv")
    fit = vvi.fit(df, parties, steps=30, seed=3)
    assert fit.train_records == expected["train_records"] and fit.test_records == expected["test_records"]
    assert fit.test_nll == expected["test_nll"] and fit.final_test_nll == expected["final_test_nll"]
    assert len(fit.privacy) == len(expected["privacy"])
    for ours, theirs in zip(fit.privacy, expected["privacy"]):
        assert (ours.viewer, ours.epsilon, ours.epsilon_rdp, ours.epsilon_pld) == (
            theirs["viewer"], theirs["epsilon"], theirs["epsilon_rdp"], theirs["epsilon_pld"])
        assert ours.accountant == ("PLD" if ours.epsilon_pld <= ours.epsilon_rdp else "RDP")
    header, rows, numeric = fit.synthetic_rows(50)
    lines = twin_path.read_text().splitlines()
    assert lines[0].split(",") == header and [l.split(",") for l in lines[1:]] == rows
    twin = fit.synthetic(50)
    assert list(twin.columns) == header and twin["wage"].dtype == np.float64
    assert set(twin["region"]) <= {"northeast", "midwest", "south", "west"}


def test_mpc_mode_equals_the_cli(cli, data_dir):
    expected = cli("vertical-vi", "--data", "cps1988", "--mode", "mpc", "--steps", 3, "--seed", 1,
                   "--components", 3, "--json")
    df, parties = vvi.cps1988(data_dir / "cps1988.csv")
    fit = vvi.fit(df, parties, mode="mpc", steps=3, components=3, seed=1)
    assert fit.test_nll == expected["test_nll"]
    assert fit.per_step["rounds"] == expected["per_step"]["rounds"] > 0


def test_numpy_columns_and_an_explicit_test_set():
    rng = np.random.default_rng(0)
    n = 400
    data = {
        "age": rng.uniform(18, 90, n),
        "income": np.exp(rng.normal(10, 1, n)),
        "sex": rng.choice(["f", "m"], n),
        "smoker": rng.choice(["no", "yes"], n),
    }
    parties = {
        "hospital": {"age": vvi.beta(17, 91), "smoker": vvi.categorical(["no", "yes"])},
        "bank": {"income": vvi.beta(100, 1e7, log=True), "sex": vvi.categorical(["f", "m"])},
    }
    test = {k: v[:50] for k, v in data.items()}
    fit = vvi.fit(data, parties, test=test, steps=20, batch=40, components=3, seed=7, sampling="fixed")
    assert fit.train_records == n and fit.test_records == 50
    assert fit.privacy_replace_one_fixed_batches is not None
    viewers = [g.viewer for g in fit.privacy]
    assert viewers[0] == "outside analyst" and "a party" in viewers
    header, rows, numeric = fit.synthetic_rows(10, seed=1)
    assert header == ["age", "smoker", "income", "sex"] and numeric == [True, False, True, False]
    again = fit.synthetic_rows(10, seed=1)
    assert again[1] == rows


def test_the_table_is_checked_against_the_public_schema():
    parties = {"a": {"x": vvi.beta(0, 1)}, "b": {"c": vvi.categorical(["u", "v"])}}
    with pytest.raises(ValueError, match="unknown category 'w'"):
        vvi.fit({"x": [0.5] * 20, "c": ["u"] * 19 + ["w"]}, parties, steps=2, batch=2)
    with pytest.raises(ValueError, match="no column 'c'"):
        vvi.fit({"x": [0.5] * 20}, parties, steps=2)
    with pytest.raises(ValueError, match="not a finite number"):
        vvi.fit({"x": [0.5] * 19 + [float("nan")], "c": ["u"] * 20}, parties, steps=2, batch=2)
    with pytest.raises(ValueError, match="batch"):
        vvi.fit({"x": [0.5] * 20, "c": ["u"] * 20}, parties, steps=2, batch=100)
    with pytest.raises(ValueError, match="lo"):
        vvi.beta(0, 1, log=True)
