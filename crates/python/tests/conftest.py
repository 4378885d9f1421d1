"""Shared fixtures: the `cape` binary the package's results are compared with, the repository's
data sets, and a runner for the CLI's JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CAPE_BIN = Path(os.environ.get("CAPE_BIN", REPO / "target" / "debug" / "cape"))
DATA = Path(os.environ.get("CAPELAB_DATA", REPO / "data"))


@pytest.fixture(scope="session")
def cli():
    """Runs `cape ARGS…` from the repository root (where the CLI finds data/) and returns its
    stdout parsed as JSON, or its stdout text with `json=False`."""
    if not CAPE_BIN.exists():
        pytest.fail(f"the cape binary is missing at {CAPE_BIN}: build it (cargo build -p capelab-cli) or set CAPE_BIN")

    def run(*args: str, json_out: bool = True):
        out = subprocess.run([str(CAPE_BIN), *map(str, args)], capture_output=True, text=True, cwd=REPO)
        if out.returncode != 0:
            raise AssertionError(f"cape {' '.join(map(str, args))} failed: {out.stderr.strip()}")
        return json.loads(out.stdout) if json_out else out.stdout

    return run


@pytest.fixture(scope="session")
def data_dir() -> Path:
    for name in ("cps1988.csv", "digits.csv"):
        if not (DATA / name).exists():
            pytest.fail(f"{DATA / name} is missing: scripts/setup.sh test writes the data sets")
    return DATA


def plain(value):
    """A result as JSON would carry it (tuples as lists), for comparing with the CLI's output."""
    return json.loads(json.dumps(value))
