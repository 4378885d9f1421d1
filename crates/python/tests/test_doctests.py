"""The examples in the modules' docstrings run and print what they show."""

from __future__ import annotations

import doctest

import pytest

import capelab

MODULES = [capelab.accountant, capelab.cape, capelab.secagg, capelab.djica, capelab.fm, capelab.nn,
           capelab.efpsn, capelab.vertical_vi]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, (module.__name__, result)
