#!/usr/bin/env python3
"""capelab's Paillier against python-phe: keys, ciphertexts and homomorphic sums in both directions.

    CAPE_BIN=target/debug/cape tools/venv/bin/python tests/paillier/interop.py

1. A ciphertext python-phe makes under a capelab public key decrypts correctly in capelab.
2. A ciphertext capelab makes under a python-phe public key decrypts correctly in python-phe.
3. A phe ciphertext and a capelab ciphertext under one key multiply into their sum, in both tools.
Signed values throughout (phe and capelab both encode m mod n with g = n + 1). Exits 1 on any
mismatch, naming it.
"""

import json
import os
import subprocess
import sys

from phe import paillier

CAPE = os.environ.get("CAPE_BIN", "target/debug/cape")
VALUES = [0, 1, -1, 42, -123456789, 2**52, -(2**52), 2**62, -(2**62)]
failures = []


def cape(*args):
    out = subprocess.run([CAPE, "paillier", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got}, want {want}")


def phe_decrypt(private, public, ciphertext):
    return private.decrypt(paillier.EncryptedNumber(public, int(ciphertext), 0))


def main():
    for bits in (1024, 2048):
        # 1. capelab key, phe encrypts, capelab decrypts.
        key = cape("keygen", "--bits", str(bits), "--seed", "7")
        n = int(key["n"])
        public = paillier.PaillierPublicKey(n)
        from_phe = [str(public.encrypt(v).ciphertext()) for v in VALUES]
        got = cape("decrypt", "--p", key["p"], "--q", key["q"], "--ciphertexts", ",".join(from_phe))
        check(f"{bits}-bit: phe → capelab", got, VALUES)

        # 2. phe key, capelab encrypts, phe decrypts.
        phe_public, phe_private = paillier.generate_paillier_keypair(n_length=bits)
        from_cape = cape("encrypt", "--n", str(phe_public.n), "--values", ",".join(map(str, VALUES)))
        got = [phe_decrypt(phe_private, phe_public, c) for c in from_cape]
        check(f"{bits}-bit: capelab → phe", got, VALUES)
        # the same with capelab's DJN randomizers (still ordinary Paillier ciphertexts)
        from_djn = cape("encrypt", "--djn", "--n", str(phe_public.n), "--values", ",".join(map(str, VALUES)))
        got = [phe_decrypt(phe_private, phe_public, c) for c in from_djn]
        check(f"{bits}-bit: capelab DJN → phe", got, VALUES)

        # 3. Mixed sums under one key, taken in each tool and decrypted in the other.
        a, b = -987654321, 123456789
        c_phe = public.encrypt(a).ciphertext()
        c_cape = cape("encrypt", "--n", key["n"], "--values", str(b))[0]
        in_phe = (c_phe * int(c_cape)) % (n * n)
        got = cape("decrypt", "--p", key["p"], "--q", key["q"], "--ciphertexts", str(in_phe))
        check(f"{bits}-bit: sum taken by phe, decrypted by capelab", got, [a + b])
        in_cape = cape("add", "--n", key["n"], "--ciphertexts", f"{c_phe},{c_cape}")
        private = paillier.PaillierPrivateKey(public, int(key["p"]), int(key["q"]))
        check(f"{bits}-bit: sum taken by capelab, decrypted by phe", phe_decrypt(private, public, in_cape), a + b)
        print(f"{bits}-bit keys: {len(VALUES)} values each way (and DJN-encrypted) and two mixed sums")

    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print("capelab and python-phe agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
