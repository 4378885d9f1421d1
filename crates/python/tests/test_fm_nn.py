"""capelab.fm and capelab.nn: `cape fm` and `cape nn`'s numbers for the same data and seed, the
normalisation into FM's domain, and the checks on the data."""

from __future__ import annotations

import numpy as np
import pytest

from capelab import fm, nn


@pytest.mark.parametrize(
    "model, mechanism, extra",
    [
        ("linear", "gaussian", {}),
        ("linear", "cape", {"sites": 4}),
        ("logistic", "cape", {}),
        ("logistic", "output", {}),
        ("linear", "laplace", {"strict": True}),
    ],
)
def test_fit_equals_cape_fm(cli, model, mechanism, extra):
    flags = ["--model", model, "--mechanism", mechanism, "--samples", 1800, "--features", 6, "--seed", 3,
             "--epsilon", 0.8]
    for key, value in extra.items():
        flags += ["--" + key] if value is True else ["--" + key, value]
    expected = cli("fm", *flags, "--json")
    data = fm.synthetic(model=model, samples=1800, features=6, seed=3)
    assert len(data.y_train) == expected["data"]["train"] and len(data.y_test) == expected["data"]["test"]
    r = fm.fit(data.x_train, data.y_train, model=model, mechanism=mechanism, epsilon=0.8, seed=3, **extra)
    assert r.weights.tolist() == expected["weights"]
    assert r.epsilon == expected["epsilon_guaranteed"] and r.delta == expected["delta_guaranteed"]
    assert r.guarantee == expected["guarantee"] and r.records_used == expected["data"]["records_used"]
    metrics = fm.evaluate(r.weights, data, model=model)
    key = "mse" if model == "linear" else "accuracy"
    assert metrics[key] == expected[key]


def test_public_bounds_put_raw_data_in_the_domain():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, (300, 3))
    y = x @ np.array([0.5, -0.2, 0.1]) + rng.normal(0, 1, 300)
    d = fm.normalise(x[:200], y[:200], x[200:], y[200:], task="regression",
                     bounds=[(0, 100)] * 3, target_bounds=(-30, 60))
    assert np.linalg.norm(d.x_train, axis=1).max() <= 1 and np.abs(d.y_train).max() <= 1
    assert d.normalisation["private"] is True
    paper = fm.normalise(x[:200], y[:200], x[200:], y[200:], task="regression", data_dependent=True)
    assert paper.normalisation["private"] is False and paper.normalisation["warning"]
    with pytest.raises(ValueError, match="bounds"):
        fm.normalise(x[:200], y[:200], x[200:], y[200:], task="regression")


def test_fm_refuses_data_outside_its_domain():
    with pytest.raises(ValueError, match=r"x: row 1 has norm"):
        fm.fit(np.array([[0.1, 0.1], [1.0, 1.0]]), np.array([0.0, 0.5]))
    with pytest.raises(ValueError, match="y: logistic"):
        fm.fit(np.zeros((3, 2)), np.array([0.0, 0.5, 1.0]), model="logistic")
    with pytest.raises(ValueError, match="y"):
        fm.fit(np.zeros((3, 2)), np.zeros(4))


@pytest.mark.parametrize("flags, kwargs", [
    ([], {}),
    (["--mechanism", "conventional", "--epsilon", "2"], dict(mechanism="conventional", epsilon=2.0)),
    (["--target-epsilon", "3"], dict(target_epsilon=3.0)),
])
def test_train_equals_cape_nn(cli, flags, kwargs):
    expected = cli("nn", "--samples", 800, "--features", 10, "--iterations", 30, "--seed", 4, *flags, "--json")
    data = nn.synthetic(samples=800, features=10, seed=4)
    r = nn.train(data, iterations=30, seed=4, **kwargs)
    assert r.accuracy == expected["accuracy"] and r.train_loss == expected["train_loss"]
    assert r.epsilon == expected["epsilon_overall"] and r.guarantee_view == expected["epsilon_overall_view"]
    assert r.epsilon_per_iteration == expected["epsilon_per_iteration"]
    assert r.privacy == expected["privacy"]
    assert [list(p) for p in r.loss_history] == expected["loss_history"]
    if "target_epsilon" in kwargs:
        assert r.epsilon <= 3.0 + 1e-9
