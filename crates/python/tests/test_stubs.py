"""The native module's type stubs (python/capelab/_capelab.pyi) name exactly what it exports, and
the public modules export what their __all__ says."""

from __future__ import annotations

import ast
from pathlib import Path

import capelab
from capelab import _capelab

STUB = Path(capelab.__file__).with_name("_capelab.pyi")


def test_the_stub_names_every_native_function_and_class():
    tree = ast.parse(STUB.read_text())
    stubbed = {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    } | {"__version__"}
    exported = {name for name in dir(_capelab) if not name.startswith("__") or name == "__version__"}
    assert stubbed - {"Array", "Progress"} == exported


def test_every_public_module_exports_its_all():
    for module in (capelab.accountant, capelab.cape, capelab.secagg, capelab.djica, capelab.fm,
                   capelab.nn, capelab.efpsn, capelab.vertical_vi):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)
        assert module.__doc__ and all(getattr(module, n).__doc__ for n in module.__all__ if callable(getattr(module, n)))
