"""capelab.djica: the `cape djica` CLI's numbers bit for bit (synthetic data, real data files,
calibration to a target), the checks on the data, progress and the GIL."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from capelab import djica

SMALL = dict(sites=3, subjects=12, components=4, grid=8, timepoints=40)


def read_csv(path):
    return np.array([[float(v) for v in line.split(",")] for line in path.read_text().splitlines()])


def cli_run(cli, tmp_path, *flags):
    out = tmp_path / "cli"
    cli("djica", "--out", out, "--quiet", *flags, json_out=False)
    return json.loads((out / "result.json").read_text()), read_csv(out / "W.csv"), read_csv(out / "V.csv")


@pytest.mark.parametrize(
    "method, extra",
    [
        ("cape", dict(pca="cape")),
        ("cape", dict(target_epsilon=50.0)),
        ("conventional", dict(pca="cape", eps_iter=2.0)),
        ("local", dict()),
        ("nonprivate", dict(schedule="anneal")),
    ],
)
def test_equals_cape_djica_on_synthetic_data(cli, tmp_path, method, extra):
    study = djica.synthetic(**SMALL, seed=5)
    result = djica.run(study.sites, study.truth, components=4, timepoints=40, method=method,
                       max_iterations=60, seed=5, **extra)
    flags = ["--sites", 3, "--subjects", 12, "--components", 4, "--grid", 8, "--timepoints", 40,
             "--max-iterations", 60, "--seed", 5, "--method", method]
    for key, value in extra.items():
        flags += ["--" + key.replace("_", "-"), value]
    expected, w, v = cli_run(cli, tmp_path, *flags)
    assert np.array_equal(result.W, w) and np.array_equal(result.V, v)
    assert result.q_ngi == expected["q_ngi"]
    assert result.iterations == expected["iterations"] and result.stop == expected["stop"]
    e = expected["overall_epsilon"]
    assert result.epsilon == e["full_view" if method == "cape" else "aggregator_view"]
    assert result.epsilon_at_max == e.get("full_view_at_max" if method == "cape" else "aggregator_view_at_max")
    assert result.privacy == expected["privacy"]
    assert [h["q"] for h in result.history] == [h["q"] for h in expected["history"]]
    if "target_epsilon" in extra:
        assert result.target == expected["target"] and result.epsilon_at_max <= 50.0
    assert (result.epsilon is None) == (method == "nonprivate")


def test_equals_cape_djica_on_real_data_files(cli, tmp_path):
    """Raw per-site matrices (no ground truth): the CLI's --data with --data-scale, and
    normalise=True with the same public scale."""
    rng = np.random.default_rng(3)
    raw = [rng.standard_normal((36, 3 * 30)) * 40 + 5 for _ in range(3)]
    files = []
    for i, x in enumerate(raw):
        path = tmp_path / f"site{i}.npy"
        np.save(path, x)
        files.append(str(path))
    expected, w, v = cli_run(cli, tmp_path, "--data", ",".join(files), "--timepoints", 30, "--data-scale", 0.01,
                             "--components", 3, "--max-iterations", 40, "--seed", 2, "--pca", "cape")
    result = djica.run(raw, components=3, timepoints=30, normalise=True, data_scale=0.01,
                       max_iterations=40, seed=2, pca="cape")
    assert np.array_equal(result.W, w) and np.array_equal(result.V, v)
    assert result.q_ngi is None and result.epsilon == expected["overall_epsilon"]["full_view"]


def test_pca_alone_is_the_first_half_of_a_run():
    study = djica.synthetic(**SMALL, seed=4)
    p = djica.pca(study.sites, components=4, timepoints=40, seed=4)
    r = djica.run(study.sites, study.truth, components=4, timepoints=40, pca="cape", max_iterations=5, seed=4)
    assert np.array_equal(p.V, r.V) and np.array_equal(p.projection, r.projection)
    assert p.privacy["scheme"] == "cape" and p.privacy["multiplier"] > 0


def test_recovers_the_maps_without_noise():
    study = djica.synthetic(**SMALL, seed=6)
    r = djica.run(study.sites, study.truth, components=4, timepoints=40, method="nonprivate", seed=6)
    assert r.q_ngi < 0.1
    # each aligned map is (nearly) its true map
    cos = np.abs(np.sum(r.aligned_maps * study.truth, axis=0)) / np.linalg.norm(study.truth, axis=0)
    assert cos.min() > 0.9, cos
    assert np.allclose(r.sources(study.sites[0]), r.unmixing @ study.sites[0])


def test_data_outside_the_clip_ball_are_refused():
    study = djica.synthetic(**SMALL, seed=1)
    sites = [x.copy() for x in study.sites]
    sites[1][:, 7] *= 3
    with pytest.raises(ValueError, match=r"sites\[1\]: time point 7"):
        djica.run(sites, components=4, timepoints=40)
    with pytest.raises(ValueError, match="timepoints"):
        djica.run(study.sites, components=4, timepoints=41)
    with pytest.raises(ValueError, match="truth"):
        djica.run(study.sites, study.truth[:, :3], components=4, timepoints=40)
    with pytest.raises(ValueError, match="components"):
        djica.run(study.sites, components=65, timepoints=40)
    bad = [x.copy() for x in study.sites]
    bad[2][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"sites\[2\]: contains NaN"):
        djica.run(bad, components=4, timepoints=40)


def test_normalise_puts_every_time_point_in_the_ball():
    x = np.random.default_rng(0).standard_normal((20, 60)) * 10
    n = djica.normalise(x, timepoints=20, scale=0.1)
    assert n.shape == x.shape and np.linalg.norm(n, axis=0).max() <= 1 + 1e-12
    assert np.abs(n[:, :20].mean(axis=1)).max() < 1  # demeaned per subject, then clipped


def test_progress_reaches_the_end_and_the_gil_is_free_meanwhile():
    study = djica.synthetic(**SMALL, seed=2)
    calls = []
    ticks = []
    done = threading.Event()

    def work():
        djica.run(study.sites, components=4, timepoints=40, max_iterations=400, seed=2,
                  progress=lambda d, t: calls.append((d, t)))
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    while not done.is_set():
        ticks.append(time.monotonic())
        time.sleep(0.002)
    thread.join()
    assert calls[0] == (0, 400) and calls[-1] == (400, 400)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert len(ticks) > 3


def test_an_exception_in_the_progress_callback_is_raised_after_the_run():
    study = djica.synthetic(**SMALL, seed=2)

    def boom(done, total):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        djica.run(study.sites, components=4, timepoints=40, max_iterations=5, progress=boom)
