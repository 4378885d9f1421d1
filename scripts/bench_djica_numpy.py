#!/usr/bin/env python3
"""The capePCA + capeDJICA loop of `cape bench djica` in numpy, for the native/numpy ratio.

Same shapes and the same work per iteration as the Rust pipeline (spec cape-secagg-pca-djica
§4–§5): per site the covariance X_s X_sᵀ/N_s with symmetric CAPE noise (upper triangle mirrored,
zero-sum part + local part), the average, a symmetric eigendecomposition keeping the R largest
algebraic eigenvalues, runica whitening; then per iteration and site Z = W·X + b, Ŷ = 1 − 2g(Z),
the per-sample natural gradients (I + ŷ zᵀ)W clipped to Frobenius norm B_G (computed without
forming them: ‖W + ŷ uᵀ‖² = ‖W‖² + 2ŷᵀW u + ‖ŷ‖²‖u‖² with u = Wᵀz), the clipped bias, CAPE noise
on both releases, and the aggregator's step. The data are random with the right shapes (heavy-
tailed sources through random blob-free mixing, clipped to ‖x‖ ≤ 1): timing does not depend on
the generator. This is a careful vectorised numpy implementation, as the spec §9.8 reference was.

Prints one JSON line: {"bench":"djica","runner":"numpy", "cells":[{subjects, pca_s, iteration_ms,
iterations, ...}], "ceiling":{f64_gflops, f32_gflops}}. `iteration_ms` is the mean over the timed
iterations; `end_to_end_s` projects capePCA + J_max iterations from it. `ceiling` is OpenBLAS's
in-cache product rate, measured as capelab_core::roofline measures faer's.

Run it with OPENBLAS_NUM_THREADS=1 (scripts/bench does) to compare with the single-threaded native
run; the JSON records the setting.

Usage: bench_djica_numpy.py [--sites 4] [--subjects 1024,256] [--grid 30] [--components 20]
                            [--timepoints 250] [--iterations 100] [--jmax 1000]
"""

import argparse
import json
import os
import time

import numpy as np


def c_delta(delta):
    return np.sqrt(2.0 * np.log(1.25 / delta))


def zero_sum(rng, taus, shape):
    e_hat = [tau * rng.standard_normal(shape) for tau in taus]
    mean = sum(e_hat) / len(taus)
    return [e - mean for e in e_hat]


def symmetric_from_upper(upper, d):
    m = np.zeros((d, d))
    iu = np.triu_indices(d)
    m[iu] = upper
    return m + np.triu(m, 1).T


def cape_pca(rng, sites, per_site, r):
    """capePCA (subject level, ε_p = 1, δ_p = 1e-5) with CAPE noise on the sites' D × N_s arrays
    (M_s subjects each): the projected sites and the seconds it took. scripts/bench_python.py
    times the same step on the package's data."""
    t0 = time.perf_counter()
    s, d = len(sites), sites[0].shape[0]
    z_p = c_delta(1e-5) / 1.0
    taus = [z_p / m_s for m_s in per_site]
    iu_len = d * (d + 1) // 2
    e = zero_sum(rng, taus, iu_len)
    released = []
    for k, x in enumerate(sites):
        c = (x @ x.T) / x.shape[1]
        noise = e[k] + taus[k] / np.sqrt(s) * rng.standard_normal(iu_len)
        released.append(c + symmetric_from_upper(noise, d))
    c_hat = sum(released) / s
    lam, vec = np.linalg.eigh(c_hat)
    order = np.argsort(lam)[::-1][:r]
    lam, v = lam[order], vec[:, order]
    lam = np.maximum(lam, 1e-3 * lam[0])
    k_proj = 2.0 * (v / np.sqrt(lam)).T
    projected = [k_proj @ x for x in sites]
    return projected, time.perf_counter() - t0


def cell(args, subjects, rng):
    s, r, d, nm = args.sites, args.components, args.grid ** 2, args.timepoints
    per_site = [subjects // s + (1 if k < subjects % s else 0) for k in range(s)]
    a = rng.standard_normal((d, r))
    sites = []
    for m_s in per_site:
        src = rng.laplace(size=(r, m_s * nm))
        x = a @ src
        x -= x.mean(axis=1, keepdims=True)
        x /= np.sqrt((x * x).sum(axis=0)).mean() * 2.0
        norms = np.sqrt((x * x).sum(axis=0))
        x /= np.maximum(1.0, norms)
        sites.append(x)

    projected, pca_s = cape_pca(rng, sites, per_site, r)

    # capeDJICA (subject level, ε_i = 0.5, δ_i = 1e-2), CAPE noise, constant ρ.
    b_g, b_h, rho = 30.0, np.sqrt(30.0), 0.5
    z = c_delta(1e-2) / 0.5
    tau_g = [2 * b_g / m_s * z for m_s in per_site]
    tau_h = [2 * b_h / m_s * z for m_s in per_site]
    w, b = np.eye(r), np.zeros(r)
    t0 = time.perf_counter()
    for _ in range(args.iterations):
        e_g = zero_sum(rng, tau_g, (r, r))
        e_h = zero_sum(rng, tau_h, r)
        g_sum, h_sum = np.zeros((r, r)), np.zeros(r)
        w_norm2 = (w * w).sum()
        for k, x in enumerate(projected):
            zz = w @ x + b[:, None]
            y = 1.0 - 2.0 / (1.0 + np.exp(-zz))
            u = w.T @ zz
            cross = (y * (w @ u)).sum(axis=0)
            norm2 = w_norm2 + 2.0 * cross + (y * y).sum(axis=0) * (u * u).sum(axis=0)
            scale = np.minimum(1.0, b_g / np.sqrt(np.maximum(norm2, 1e-300)))
            n = x.shape[1]
            g = (scale.sum() * w + (y * scale) @ u.T) / n
            y_norm = np.sqrt((y * y).sum(axis=0))
            h = (y * np.minimum(1.0, b_h / np.maximum(y_norm, 1e-300))).sum(axis=1) / n
            g_sum += g + e_g[k] + tau_g[k] / np.sqrt(s) * rng.standard_normal((r, r))
            h_sum += h + e_h[k] + tau_h[k] / np.sqrt(s) * rng.standard_normal(r)
        w = w + rho * g_sum / s
        b = b + rho * h_sum / s
    ica_s = time.perf_counter() - t0
    iteration_ms = 1e3 * ica_s / args.iterations
    return {
        "subjects": subjects,
        "sites": s,
        "voxels": d,
        "components": r,
        "timepoints": nm,
        "pca_s": pca_s,
        "iterations": args.iterations,
        "iteration_ms": iteration_ms,
        "jmax": args.jmax,
        "end_to_end_s": pca_s + args.jmax * iteration_ms / 1e3,
    }


def ceiling():
    """GFLOP/s of an in-cache 256x256 product (capelab_core::roofline's shape and timing): the best
    of three batches of at least 0.2 s, after one product to warm up and size them."""
    n = 256
    rates = {}
    for dtype in (np.float64, np.float32):
        i, j = np.indices((n, n))
        a = (((i * 7 + j * 3) % 11) * 0.1).astype(dtype)
        b = (((i * 5 + j) % 13) * 0.1).astype(dtype)
        c = np.empty((n, n), dtype)
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        reps = max(3, int(np.ceil(0.2 / max(time.perf_counter() - t, 1e-6))))
        best = 0.0
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(reps):
                np.matmul(a, b, out=c)
            best = max(best, 2.0 * n**3 * reps / (time.perf_counter() - t) / 1e9)
        rates[f"{np.dtype(dtype).name}_gflops"] = best
    return {"f64_gflops": rates["float64_gflops"], "f32_gflops": rates["float32_gflops"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sites", type=int, default=4)
    p.add_argument("--subjects", default="1024,256")
    p.add_argument("--grid", type=int, default=30)
    p.add_argument("--components", type=int, default=20)
    p.add_argument("--timepoints", type=int, default=250)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--jmax", type=int, default=1000)
    args = p.parse_args()
    rng = np.random.default_rng(1)
    cells = [cell(args, int(m), rng) for m in args.subjects.split(",")]
    print(json.dumps({
        "bench": "djica",
        "runner": "numpy",
        "build": f"numpy {np.__version__}, OPENBLAS_NUM_THREADS="
        + os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
        "cells": cells,
        "ceiling": ceiling(),
    }))


if __name__ == "__main__":
    main()
