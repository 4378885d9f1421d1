#!/usr/bin/env python3
"""python-phe (with gmpy2) on the operations `cape bench paillier` times: Paillier-2048 key
generation, encryption and decryption of small signed integers. Prints one JSON line
{"bench":"paillier","runner":"phe",...}. Usage: bench_paillier_phe.py [repetitions]
"""

import json
import statistics
import sys
import time

import gmpy2  # noqa: F401  (phe uses it when installed; imported to fail loudly if missing)
import phe
from phe import paillier


def timed(f):
    start = time.perf_counter()
    out = f()
    return out, (time.perf_counter() - start) * 1e3


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    keygen = []
    for _ in range(5):
        (public, private), ms = timed(lambda: paillier.generate_paillier_keypair(n_length=2048))
        keygen.append(ms)
    enc, dec = [], []
    for i in range(reps):
        # phe precomputes nothing by default; ciphertext(be_secure=True) forces the obfuscation
        # (the r^n exponentiation), which is what a real encryption costs.
        c, ms = timed(lambda: public.encrypt(i - 20).ciphertext(be_secure=True))
        enc.append(ms)
        number = paillier.EncryptedNumber(public, c, 0)
        m, ms = timed(lambda: private.decrypt(number))
        assert m == i - 20
        dec.append(ms)
    cases = [
        {"op": "keygen", "median_ms": statistics.median(keygen), "repetitions": 5},
        {"op": "encrypt", "median_ms": statistics.median(enc), "repetitions": reps},
        {"op": "decrypt", "median_ms": statistics.median(dec), "repetitions": reps},
    ]
    print(json.dumps({"bench": "paillier", "runner": "phe", "phe": phe.__version__,
                      "gmpy2": gmpy2.version(), "cases": cases}, separators=(",", ":")))


if __name__ == "__main__":
    main()
