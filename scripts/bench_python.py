#!/usr/bin/env python3
"""The `capelab` Python package beside the peers a Python user would pick and beside the CLI, in
one run (scripts/bench's `python` section):

- capePCA (S = 4 sites, D = 900 voxels, R = 20, subject level, ε_p = 1, CAPE noise) on the same
  synthetic study at M = 256 and 1024 subjects: `capelab.djica.pca` plus the projection of every
  site, as a user calls it (argument checks and the copy into the core included), next to the
  same step in numpy (scripts/bench_djica_numpy.py's `cape_pca`, one BLAS thread) and to
  `cape bench djica`'s capePCA (the CLI, release build), each on one thread and on all cores.
- The PLD accountant: T = 20 000 Poisson-subsampled Gaussian releases (z = 2.042, q = 100/30162,
  δ = 1e-5) at grid steps 1e-4 and 1e-3: `capelab.accountant.epsilon`, next to dp-accounting's
  PLDAccountant (scripts/bench_pld_dpaccounting.py's `time_case`) and `cape bench pld`.

Prints one JSON object (also written to --out): per cell the seconds of each runner, the ratios
python/numpy, python/dp-accounting and python/cli, and whether the package kept up with the CLI
(within 5 %: timing noise on a shared machine).

Usage: bench_python.py --cape target/release/cape [--subjects 256,1024] [--repetitions 5] [--out FILE]
The package must be installed in this interpreter (scripts/bench installs it from ./crates/python).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOLERANCE = 1.05


def child(args: argparse.Namespace) -> dict:
    """One thread setting, in its own process (rayon's and OpenBLAS's pools are sized at start)."""
    import numpy as np

    import capelab
    from capelab import djica

    sys.path.insert(0, str(HERE))
    import bench_djica_numpy

    cells = []
    for m in [int(x) for x in args.subjects.split(",")]:
        study = djica.synthetic(sites=4, subjects=m, components=20, grid=30, timepoints=250, seed=1)
        per_site = [len(lengths) for lengths in study.subject_lengths]
        python_s, numpy_s = [], []
        for rep in range(args.repetitions):
            t = time.perf_counter()
            p = djica.pca(study.sites, components=20, timepoints=250, epsilon=1.0, delta=1e-5, seed=1)
            projected = [p.projection @ x for x in study.sites]
            python_s.append(time.perf_counter() - t)
            rng = np.random.default_rng(rep)
            numpy_s.append(bench_djica_numpy.cape_pca(rng, study.sites, per_site, 20)[1])
        del projected
        cells.append({
            "subjects": m,
            "python_pca_s": min(python_s),
            "numpy_pca_s": min(numpy_s),
            "repetitions": args.repetitions,
        })
    pld = []
    for interval in (1e-4, 1e-3):
        times = []
        for _ in range(args.repetitions):
            t = time.perf_counter()
            eps = capelab.accountant.epsilon(2.042, 20_000, 1e-5, sampling_rate=100 / 30162, pld_interval=interval)
            times.append((time.perf_counter() - t) * 1e3)
        pld.append({"interval": interval, "epsilon": eps.epsilon, "python_median_ms": statistics.median(times)})
    return {"djica": cells, "pld": pld}


def run_child(threads: int | None, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"  # numpy as bench_djica_numpy runs it
    if threads is not None:
        env["RAYON_NUM_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, __file__, "--child", "--subjects", args.subjects,
                          "--repetitions", str(args.repetitions)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_python.py: the child run failed:\n{out.stderr}")
    return json.loads(out.stdout)


def cape_json(cape: str, *argv: str) -> dict:
    out = subprocess.run([cape, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_python.py: cape {' '.join(argv)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cape", default=str(HERE.parent / "target" / "release" / "cape"))
    p.add_argument("--subjects", default="256,1024")
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--out")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return

    import dp_accounting  # noqa: F401  (fail early if the peer is missing)

    import capelab

    sys.path.insert(0, str(HERE))
    import bench_pld_dpaccounting

    one = run_child(1, args)
    every = run_child(None, args)
    cli = cape_json(args.cape, "bench", "djica", "--subjects", args.subjects, "--iterations", "1")
    cli_pld = cape_json(args.cape, "bench", "pld", "--repetitions", str(args.repetitions * 2 + 1))

    djica = []
    for a, b in zip(one["djica"], every["djica"]):
        m = a["subjects"]
        native = next(c for c in cli["native"]["cells"] if c["subjects"] == m)
        threads = cli.get("native_threads") or {"cells": []}
        native_threads = next((c for c in threads["cells"] if c["subjects"] == m), None)
        row = {
            "subjects": m,
            "one_thread": {
                "python_s": a["python_pca_s"], "numpy_s": a["numpy_pca_s"], "cli_s": native["pca_s"],
                "python_over_numpy": a["python_pca_s"] / a["numpy_pca_s"],
                "python_over_cli": a["python_pca_s"] / native["pca_s"],
            },
            "all_threads": {
                "python_s": b["python_pca_s"],
                "cli_s": native_threads["pca_s"] if native_threads else None,
                "cli_runner": threads.get("runner"),
                "python_over_cli": b["python_pca_s"] / native_threads["pca_s"] if native_threads else None,
            },
        }
        djica.append(row)
    pld = []
    for case in one["pld"]:
        theirs = bench_pld_dpaccounting.time_case(case["interval"], args.repetitions)
        native = next(c for c in cli_pld["native"] if c["interval"] == case["interval"])
        pld.append({
            "interval": case["interval"],
            "epsilon": case["epsilon"],
            "python_ms": case["python_median_ms"],
            "dpaccounting_ms": theirs["median_ms"],
            "cli_ms": native["median_ms"],
            "python_over_dpaccounting": case["python_median_ms"] / theirs["median_ms"],
            "python_over_cli": case["python_median_ms"] / native["median_ms"],
        })
    ratios = [r["one_thread"]["python_over_cli"] for r in djica] + [r["all_threads"]["python_over_cli"] for r in djica
              if r["all_threads"]["python_over_cli"] is not None] + [r["python_over_cli"] for r in pld]
    report = {
        "bench": "python",
        "package": f"capelab {capelab.__version__} (pip install ./crates/python, profile `python`)",
        "python": sys.version.split()[0],
        "capepca": {"sites": 4, "voxels": 900, "components": 20, "timepoints": 250, "cells": djica},
        "pld": {"noise_multiplier": 2.042, "sampling_rate": 100 / 30162, "compositions": 20_000, "delta": 1e-5,
                "cases": pld},
        "worst_python_over_cli": max(ratios),
        "python_keeps_up_with_cli": max(ratios) <= TOLERANCE,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
