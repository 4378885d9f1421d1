"""The book's Python chapter (docs/src/python.md) runs: its ```python blocks, in order, in one
namespace from the repository root (as a reader pastes them)."""

from __future__ import annotations

import os
import re

import pytest
from conftest import REPO

CHAPTER = REPO / "docs" / "src" / "python.md"


def test_the_chapters_code_runs(data_dir, capsys):
    blocks = re.findall(r"```python\n(.*?)```", CHAPTER.read_text(), flags=re.S)
    assert len(blocks) >= 8
    # A block that is one of the examples verbatim (the quickstart) is run by test_examples.py.
    examples = {p.read_text() for p in (REPO / "crates" / "python" / "examples").glob("*.py")}
    blocks = [b for b in blocks if b not in examples]
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"{CHAPTER.name} block {i + 1}", "exec"), namespace)
            except Exception as e:  # noqa: BLE001 - report which block failed
                pytest.fail(f"block {i + 1} of {CHAPTER}: {type(e).__name__}: {e}\n{block}")
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "0.909" in out and "PLD" in out
