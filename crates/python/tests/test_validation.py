"""Every bad argument is a ValueError naming the argument, raised before any work, and no input
reaches a Rust panic (PyO3's PanicException derives from BaseException, so the tests would not
catch it as ValueError and fail)."""

from __future__ import annotations

import numpy as np
import pytest

import capelab
from capelab import _capelab, accountant, cape, djica, efpsn, fm, nn, secagg
from capelab import vertical_vi as vvi

SITES = [np.full((4, 6), 0.1), np.full((4, 6), 0.1)]
DATA = fm.Data(np.zeros((8, 2)), np.array([0.0, 1.0] * 4), np.zeros((4, 2)), np.array([0.0, 1.0] * 2), None, {})

CASES = [
    ("noise_multiplier", lambda: accountant.epsilon(-1, 10, 1e-5)),
    ("noise_multiplier", lambda: accountant.epsilon(float("nan"), 10, 1e-5)),
    ("compositions", lambda: accountant.epsilon(1.0, 0, 1e-5)),
    ("compositions", lambda: accountant.epsilon(1.0, 2.5, 1e-5)),
    ("compositions", lambda: accountant.epsilon(1.0, -3, 1e-5)),
    ("delta", lambda: accountant.epsilon(1.0, 10, 0.0)),
    ("delta", lambda: accountant.epsilon(1.0, 10, 1.0)),
    ("sampling_rate", lambda: accountant.epsilon(1.0, 10, 1e-5, sampling_rate=1.5)),
    ("collusion_factor", lambda: accountant.epsilon(1.0, 10, 1e-5, collusion_factor=0.5)),
    ("accountant", lambda: accountant.epsilon(1.0, 10, 1e-5, accountant="moments")),
    ("pld_interval", lambda: accountant.epsilon(1.0, 10, 1e-5, sampling_rate=0.1, pld_interval=0.5)),
    ("pld_interval", lambda: accountant.epsilon(0.05, 100_000, 1e-5, sampling_rate=0.9, pld_interval=1e-5)),
    ("target_epsilon", lambda: accountant.calibrate(0.0, 1e-5, 10)),
    ("orders", lambda: accountant.compare(1.0, 10, 1e-5, orders=[0.5])),
    ("epsilon", lambda: accountant.Ledger("s", -1.0, 1e-5)),
    ("site", lambda: accountant.Ledger("", 1.0, 1e-5)),
    ("json", lambda: accountant.Ledger.from_json("{}")),
    ("count", lambda: accountant.Ledger("s", 1.0, 1e-5).spend_gaussian("x", 1.0, count=0)),
    ("sites", lambda: cape.release_privacy(1, 1.0, 0.5)),
    ("colluders", lambda: cape.collusion_factor(4, 4)),
    ("view", lambda: cape.collusion_factor(4, view="other")),
    ("values", lambda: cape.simulate_round(np.ones((1, 3)), 1.0)),
    ("values", lambda: cape.simulate_round(np.ones(3), 1.0)),
    ("values", lambda: cape.simulate_round(np.array([["a", "b"], ["c", "d"]]), 1.0)),
    ("local_sd", lambda: cape.simulate_round(np.ones((3, 2)), [1.0, 2.0])),
    ("local_sd[1]", lambda: cape.simulate_round(np.ones((3, 2)), [1.0, 0.0, 1.0])),
    ("drop_after_noise", lambda: cape.simulate_round(np.ones((3, 2)), 1.0, drop_after_noise=[5])),
    ("seed", lambda: cape.simulate_round(np.ones((3, 2)), 1.0, seed=-1)),
    ("seed", lambda: cape.simulate_round(np.ones((3, 2)), 1.0, seed=2**64)),
    ("senders", lambda: cape.estimate(np.ones((2, 2)), [0], [0, 1])),
    ("inputs", lambda: secagg.simulate(np.full((4, 2), 3.0), bound=1.0)),
    ("bound", lambda: secagg.simulate(np.ones((4, 2)), bound=-1.0)),
    ("bound", lambda: secagg.simulate(np.ones((4, 2)), bound=1e30)),
    ("frac_bits", lambda: secagg.simulate(np.ones((4, 2)), bound=2.0, frac_bits=60)),
    ("threshold", lambda: secagg.simulate(np.ones((4, 2)), bound=2.0, threshold=9)),
    ("threshold", lambda: secagg.simulate(np.ones((6, 2)), bound=2.0, threshold=2)),
    ("harary_k", lambda: secagg.simulate(np.ones((10, 2)), bound=2.0, harary_k=3)),
    ("harary_k", lambda: secagg.simulate(np.ones((10, 2)), bound=2.0, harary_k=12)),
    ("dropouts", lambda: secagg.simulate(np.ones((4, 2)), bound=2.0, dropouts=[(9, "after_advertise")])),
    ("dropouts", lambda: secagg.simulate(np.ones((4, 2)), bound=2.0, dropouts=[(1, "whenever")])),
    ("dropouts", lambda: secagg.simulate(np.ones((4, 2)), bound=2.0, dropouts=[(1, "after_advertise"), (1, "after_unmask")])),
    ("dropout_fraction", lambda: secagg.choose_harary(100, 0.7, 0.5)),
    ("sites", lambda: djica.run([], timepoints=3)),
    ("sites", lambda: djica.run(np.zeros((4, 6)), timepoints=3)),
    ("sites[1]", lambda: djica.run([SITES[0], np.zeros((5, 6))], timepoints=3)),
    ("sites[0]", lambda: djica.run([np.zeros((4, 6), dtype=complex), SITES[1]], timepoints=3)),
    ("sites[0]", lambda: djica.run([np.zeros((2, 2, 2)), SITES[1]], timepoints=3)),
    ("timepoints", lambda: djica.run(SITES, components=2)),
    ("subject_lengths[0]", lambda: djica.run(SITES, components=2, subject_lengths=[[3, 2], [6]])),
    ("components", lambda: djica.run(SITES, components=5, timepoints=3)),
    ("components", lambda: djica.run(SITES, components=1, timepoints=3)),
    ("method", lambda: djica.run(SITES, components=2, timepoints=3, method="magic")),
    ("eps_iter", lambda: djica.run(SITES, components=2, timepoints=3, eps_iter=0)),
    ("delta_iter", lambda: djica.run(SITES, components=2, timepoints=3, delta_iter=2)),
    ("average_tail", lambda: djica.run(SITES, components=2, timepoints=3, average_tail=1.5)),
    ("max_iterations", lambda: djica.run(SITES, components=2, timepoints=3, max_iterations=0)),
    ("target_epsilon", lambda: djica.run(SITES, components=2, timepoints=3, method="nonprivate", target_epsilon=1)),
    ("progress", lambda: djica.run(SITES, components=2, timepoints=3, progress="yes")),
    ("sites", lambda: djica.run([SITES[0]], components=2, timepoints=3)),
    ("grid", lambda: djica.synthetic(grid=1)),
    ("subjects", lambda: djica.synthetic(sites=4, subjects=3)),
    ("preset", lambda: djica.synthetic(preset="easy")),
    ("scale", lambda: djica.normalise(np.ones((3, 4)), timepoints=2, scale=0)),
    ("mechanism", lambda: fm.fit(np.zeros((4, 2)), np.zeros(4), mechanism="magic")),
    ("epsilon", lambda: fm.fit(np.zeros((4, 2)), np.zeros(4), epsilon=-1)),
    ("sites", lambda: fm.fit(np.zeros((4, 2)), np.zeros(4), mechanism="cape", sites=9)),
    ("sites", lambda: fm.fit(np.zeros((4, 2)), np.zeros(4), mechanism="cape", sites=1)),
    ("colluders", lambda: fm.fit(np.zeros((8, 2)), np.zeros(8), mechanism="cape", sites=4, colluders=4)),
    ("samples", lambda: fm.synthetic(samples=2)),
    ("data.x_test", lambda: nn.train(fm.Data(DATA.x_train, DATA.y_train, np.zeros((4, 3)), DATA.y_test, None, {}))),
    ("data.y_train", lambda: nn.train(fm.Data(DATA.x_train, DATA.y_train * 2, DATA.x_test, DATA.y_test, None, {}))),
    ("hidden", lambda: nn.train(DATA, hidden=0)),
    ("sites", lambda: nn.train(DATA, sites=1)),
    ("labels", lambda: efpsn.run(np.zeros((4, 2)), [0, 1, 2])),
    ("labels", lambda: efpsn.run(np.zeros((4, 2)), [0, 1, -1, 0])),
    ("labels", lambda: efpsn.run(np.zeros((4, 2)))),
    ("key_bits", lambda: efpsn.run(key_bits=512)),
    ("graph", lambda: efpsn.run(graph="torus")),
    ("decay", lambda: efpsn.run(decay=2.0)),
    ("gamma", lambda: efpsn.run(gamma=0)),
    ("basis", lambda: efpsn.run(basis=(1, 3, 3), iterations=1, key_bits=1024, methods=["noise-free"])),
    ("parties", lambda: vvi.fit({"x": [1.0]}, {})),
    ("parties", lambda: vvi.fit({"x": [1.0]}, {"a": {"x": "beta"}})),
    ("parties", lambda: vvi.fit({"x": [1.0]}, {"a": {"x": vvi.beta(0, 2)}, "b": {"x": vvi.beta(0, 2)}})),
    ("labels", lambda: vvi.categorical(["only"])),
    ("labels", lambda: vvi.categorical(["a,b", "c"])),
    ("mode", lambda: vvi.fit({"x": [1.0] * 5}, {"a": {"x": vvi.beta(0, 2)}}, mode="mpc")),
    ("sigma", lambda: vvi.fit({"x": [1.0] * 5}, {"a": {"x": vvi.beta(0, 2)}}, sigma=-1)),
    ("data", lambda: vvi.fit({"x": [1.0] * 5, "c": ["u"] * 4}, {"a": {"x": vvi.beta(0, 2)}, "b": {"c": vvi.categorical("uv")}})),
]


@pytest.mark.parametrize("argument, call", CASES, ids=[f"{i}-{a}" for i, (a, _) in enumerate(CASES)])
def test_bad_arguments_are_value_errors_naming_the_argument(argument, call):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith((argument + ":", argument + "[")), str(e.value)


def test_the_native_module_refuses_what_the_python_layer_would_have():
    """Called directly, without the Python checks, the native functions still refuse, never panic."""
    settings = dict(method="cape", components=9, eps_iter=0.5, delta_iter=1e-2, privacy_unit="subject",
                    pca_private=False, eps_pca=1.0, delta_pca=1e-5, pca_rigorous=False, rate=0.5,
                    max_iterations=3, schedule="auto", half_life=100.0, average_tail=0.5, clip=30.0,
                    target_epsilon=None, normalise_scale=None, seed=1)
    with pytest.raises(ValueError, match="sites"):
        _capelab.djica_run([], [], None, settings)
    with pytest.raises(ValueError, match="components"):
        _capelab.djica_run(SITES, [[6], [6]], None, settings)
    with pytest.raises(ValueError, match="subject_lengths"):
        _capelab.djica_run(SITES, [[5], [6]], None, dict(settings, components=2))
    with pytest.raises(ValueError, match="senders"):
        _capelab.cape_estimate(np.ones((1, 2)), [2**40], [0])
    with pytest.raises(ValueError):
        _capelab.cape_round(np.ones((3, 2)), [1.0, 1.0, 1.0], 1, 0, [7], [])
    with pytest.raises(ValueError, match="accountant"):
        _capelab.account_one(1.0, 1, None, None, "other", 1e-4, delta=1e-5)


def test_the_version_is_the_crates():
    assert capelab.__version__.count(".") == 2
