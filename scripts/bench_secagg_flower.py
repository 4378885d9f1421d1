#!/usr/bin/env python3
"""One SecAgg+ round built from Flower's own primitives, timed beside capelab's (issue 14).

Flower (flwr, pinned in scripts/setup.sh) ships the pieces of its SecAgg+ workflow in
`flwr.common.secure_aggregation`: ECDH key pairs and HKDF shared keys, Fernet encryption of the
key shares, PyCryptodome's Shamir sharing, numpy masks from `pseudo_rand_gen`, quantisation. This
script runs every party of one round in this process, on one thread, in the order of Flower's
workflow (keys; shares of the self-mask seed and of the mask key, encrypted to each neighbour;
the masked quantised input; the server's sum, the self-mask seeds rebuilt from t shares each and
removed), checks the unmasked sum against the plain sum, and prints one JSON line per cell: the
whole instance's seconds, the sites' and the server's. The graph is the complete one (k = S − 1)
or SecAgg+'s k neighbours on a ring, as capelab's Harary graph; no site drops out.

  tools/venv/bin/python scripts/bench_secagg_flower.py --sites 64 --lengths 1000,100000 \
      --k 18 --threshold 10 [--capelab bench-out/secagg.json] > bench-out/secagg-flower.json

With `--capelab`, the JSON of `cape bench secagg` (its `threads` rows: one instance on one thread,
all parties) gives `flower_over_capelab` per cell, computed in the same run.
"""

import argparse
import json
import sys
import time
from importlib.metadata import version

import numpy as np
from flwr.common.secure_aggregation.crypto.shamir import combine_shares, create_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
    decrypt,
    encrypt,
    generate_key_pairs,
    generate_shared_key,
    private_key_to_bytes,
)
from flwr.common.secure_aggregation.quantization import quantize
from flwr.common.secure_aggregation.secaggplus_utils import (
    pseudo_rand_gen,
    share_keys_plaintext_concat,
    share_keys_plaintext_separate,
)

MOD_RANGE = 1 << 32  # Flower's default modulus for the masked sum
QUANT_RANGE = 1 << 22  # Flower's default quantisation range
CLIP = 8.0


def neighbours(s, sites, k):
    """The k sites around s on the ring (k/2 each side), or all others for k = S − 1."""
    if k >= sites - 1:
        return [v for v in range(sites) if v != s]
    half = k // 2
    return sorted({(s + d) % sites for d in range(-half, half + 1)} - {s})


def one_round(sites, length, k, threshold, rng):
    shape = [(length,)]
    site_s = 0.0
    server_s = 0.0
    # R0: two key pairs per site (one for the masks, one for encrypting shares)
    t0 = time.perf_counter()
    keys = [(generate_key_pairs(), generate_key_pairs()) for _ in range(sites)]
    site_s += time.perf_counter() - t0
    # R1: shares of the self-mask seed b and of the mask secret key, encrypted to each neighbour
    t0 = time.perf_counter()
    seeds, boxes = [], {}
    for s in range(sites):
        (sk1, _), (sk2, _) = keys[s]
        around = neighbours(s, sites, k)
        b = rng.bytes(32)
        seeds.append(b)
        holders = [s] + around
        b_shares = create_shares(b, threshold, len(holders))
        sk_shares = create_shares(private_key_to_bytes(sk1), threshold, len(holders))
        for i, v in enumerate(holders):
            plain = share_keys_plaintext_concat(s, v, b_shares[i], sk_shares[i])
            if v == s:
                boxes[(s, v)] = plain
            else:
                key = generate_shared_key(sk2, keys[v][1][1])
                boxes[(s, v)] = encrypt(key, plain)
    site_s += time.perf_counter() - t0
    # R2: each site decrypts what it holds, quantises its input and masks it
    t0 = time.perf_counter()
    inputs = [rng.uniform(-1.0, 1.0, length) for _ in range(sites)]
    held = {}
    masked = []
    for s in range(sites):
        (sk1, _), (sk2, _) = keys[s]
        around = neighbours(s, sites, k)
        for u in [s] + around:
            box = boxes[(u, s)]
            plain = box if u == s else decrypt(generate_shared_key(sk2, keys[u][1][1]), box)
            src, dst, b_share, _ = share_keys_plaintext_separate(plain)
            assert (src, dst) == (u, s)
            held[(u, s)] = b_share
        q = quantize([inputs[s]], CLIP, QUANT_RANGE)[0].astype(np.int64)
        q += pseudo_rand_gen(seeds[s], MOD_RANGE, shape)[0]
        for v in around:
            shared = generate_shared_key(sk1, keys[v][0][1])
            mask = pseudo_rand_gen(shared, MOD_RANGE, shape)[0]
            q = q + mask if s < v else q - mask
        masked.append(np.mod(q, MOD_RANGE))
    site_s += time.perf_counter() - t0
    # R3 + server: sum, rebuild every self-mask seed from t shares, remove the self-masks
    t0 = time.perf_counter()
    total = np.zeros(length, dtype=np.int64)
    for m in masked:
        total = np.mod(total + m, MOD_RANGE)
    for s in range(sites):
        around = neighbours(s, sites, k)
        shares = [held[(s, v)] for v in ([s] + around)[:threshold]]
        b = combine_shares(shares)
        assert b == seeds[s], "a self-mask seed was not rebuilt"
        total = np.mod(total - pseudo_rand_gen(b, MOD_RANGE, shape)[0], MOD_RANGE)
    server_s += time.perf_counter() - t0
    return site_s, server_s, total, inputs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sites", type=int, default=64)
    ap.add_argument("--lengths", default="1000,100000")
    ap.add_argument("--k", type=int, default=18, help="SecAgg+ degree (capelab's choice at S = 64)")
    ap.add_argument("--threshold", type=int, default=10, help="t per neighbourhood for SecAgg+")
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--capelab", help="cape bench secagg JSON, for the ratios")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    complete_t = args.sites * 2 // 3 + 1  # capelab's default threshold on the complete graph
    cells = []
    for length in [int(x) for x in args.lengths.split(",")]:
        for graph, k, t in [
            ("complete", args.sites - 1, complete_t),
            ("harary", args.k, args.threshold),
        ]:
            runs = []
            for _ in range(args.repetitions):
                t0 = time.perf_counter()
                site_s, server_s, total, inputs = one_round(args.sites, length, k, t, rng)
                instance_s = time.perf_counter() - t0
                # the masks cancelled: the sum is the sum of the quantised inputs (each input in
                # [-1, 1] quantised within one step; the offset is S·CLIP in quantised units)
                step = 2 * CLIP / QUANT_RANGE
                plain = np.sum(inputs, axis=0)
                got = total * step - args.sites * CLIP
                err = float(np.max(np.abs(got - plain)))
                assert err <= args.sites * step, f"the unmasked sum is off by {err}"
                runs.append((instance_s, site_s, server_s))
                print(
                    f"flower {graph} S = {args.sites} L = {length}: {instance_s:.2f} s "
                    f"(sites {site_s:.2f} s, server {server_s:.2f} s)",
                    file=sys.stderr,
                )
            runs.sort()
            instance_s, site_s, server_s = runs[len(runs) // 2]
            cells.append(
                {
                    "graph": graph,
                    "sites": args.sites,
                    "k": k,
                    "threshold": t,
                    "length": length,
                    "instance_s": instance_s,
                    "sites_s": site_s,
                    "server_s": server_s,
                }
            )
    out = {
        "bench": "secagg-flower",
        "runner": f"flwr {version('flwr')} primitives, numpy {np.__version__}, one thread",
        "cells": cells,
    }
    if args.capelab:
        capelab = json.load(open(args.capelab))
        rows = {(r["graph"], r["sites"], r["length"]): r for r in capelab.get("threads", [])}
        out["flower_over_capelab"] = [
            {
                "graph": c["graph"],
                "sites": c["sites"],
                "length": c["length"],
                "capelab_s": rows[key]["one_thread_median_ms"] / 1e3,
                "flower_s": c["instance_s"],
                "ratio": c["instance_s"] / (rows[key]["one_thread_median_ms"] / 1e3),
            }
            for c in cells
            if (key := (c["graph"], c["sites"], c["length"])) in rows
        ]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
