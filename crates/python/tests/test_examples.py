"""The book's examples (crates/python/examples) run, and print what the book says they print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

EXPECTED = {
    "quickstart.py": [r"ε = 0\.909\d at δ = 1e-05 \(PLD", r"q_NGI = 0\.\d{3} at ε = \d+\.\d, δ = 1e-05"],
    "ledger.py": [r"after DP-VI: ε = 0\.909 by PLD", r"refused: ", r"saved and read back: 2 releases"],
    "secagg_dropouts.py": [r"sum exact = True", r"site 3 dropped in MaskedInput \(TimedOut\)", r"same sum: True"],
    "cape_noise.py": [r"zero-sum noise cancels exactly: True", r"CAPE estimate error"],
    "synthetic_twin.py": [r"ε = +0\.\d+ at δ = 1e-05 for outside analyst", r"share part-time"],
    "own_fmri.py": [r"unmixing \(5, 100\), maps \(100, 5\)", r"ε = 100\.00 at δ = 1e-05"],
}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


def test_the_quickstart_is_five_lines():
    lines = [l for l in (EXAMPLES / "quickstart.py").read_text().splitlines() if l.strip()]
    assert len(lines) == 5


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name, data_dir):
    out = subprocess.run([sys.executable, str(EXAMPLES / name), str(data_dir / "cps1988.csv")]
                         if name == "synthetic_twin.py" else [sys.executable, str(EXAMPLES / name)],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stderr
    for pattern in EXPECTED[name]:
        assert re.search(pattern, out.stdout), (pattern, out.stdout)
