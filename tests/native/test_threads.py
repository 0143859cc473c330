"""torch.set_num_threads / get_num_threads: kernels give the same results on one thread."""

import numpy as np
import pytest

import ferrograd as torch


@pytest.fixture
def restore_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_one_thread_gives_the_same_results(restore_threads):
    torch.manual_seed(0)
    a, b = torch.randn(300, 200), torch.randn(200, 250)
    x = torch.randn(1 << 19)
    many = ((a @ b).numpy(), (a @ b.t().contiguous().t()).numpy(), x.exp().sum().item())
    torch.set_num_threads(1)
    assert torch.get_num_threads() == 1
    one = ((a @ b).numpy(), (a @ b.t().contiguous().t()).numpy(), x.exp().sum().item())
    np.testing.assert_allclose(one[0], many[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(one[1], many[1], rtol=1e-5, atol=1e-4)
    assert one[2] == pytest.approx(many[2], rel=1e-5)


def test_set_num_threads_rejects_non_positive(restore_threads):
    with pytest.raises(RuntimeError):
        torch.set_num_threads(0)
