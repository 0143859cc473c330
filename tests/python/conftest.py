"""Fixtures shared by the tests in tests/python."""

import pytest


@pytest.fixture(scope="module")
def real_torch():
    """PyTorch, for the parity tests (the test skips without it). Modules defining their own
    ``real_torch`` fixture use theirs."""
    return pytest.importorskip("torch")
