"""The op registries of the Rust core (``_core._ops()``) against the op table and the API.

Every op the core registers must have an op-table row (so the generic forward, gradient and
PyTorch-comparison tests cover it), and be reachable by its name as a Tensor method and a
``ferrograd`` function.
"""

import pytest

import ferrograd
from ferrograd import _core
from op_db import OP_DB

REGISTERED = [(family, name) for family, names in _core._ops().items() for name in names]


def test_the_registries_are_not_empty():
    families = _core._ops()
    assert set(families) >= {"unary", "binary"}
    assert all(families.values())


@pytest.mark.parametrize("family,name", REGISTERED, ids=[n for _, n in REGISTERED])
def test_every_registered_op_has_an_op_table_row(family, name):
    rows = {row.name for row in OP_DB}
    assert name in rows, f"{family} op {name!r} has no OpInfo row in tests/native/op_db.py"


@pytest.mark.parametrize("family,name", REGISTERED, ids=[n for _, n in REGISTERED])
def test_every_registered_op_is_a_method_and_a_function(family, name):
    assert callable(getattr(ferrograd.Tensor, name))
    assert callable(getattr(ferrograd, name))
    assert callable(getattr(_core, name))


@pytest.mark.parametrize("name", _core._ops()["unary"])
def test_every_unary_op_has_an_in_place_row(name):
    # x.<op>_() is generated with the op (src/py/registry.rs); its row is op_db's _UNARY_INPLACE
    rows = {row.name for row in OP_DB}
    assert name + "_" in rows, f"unary op {name!r}: add it to _UNARY_INPLACE in tests/native/op_db.py"
    assert callable(getattr(ferrograd.Tensor, name + "_"))
