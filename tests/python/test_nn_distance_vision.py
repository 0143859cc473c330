"""Distances (cosine_similarity, pairwise_distance, triplet_margin_loss), pixel shuffles,
interpolation and grid sampling: the modules, argument handling and error messages (the
values and gradients of the functions are in tests/native/op_db.py's rows)."""

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F


def _r(*shape):
    return torch.tensor(np.random.default_rng(sum(shape)).standard_normal(shape), dtype=torch.float32)


# --- modules


def test_distance_modules_match_functions():
    a, b = _r(4, 5), _r(4, 5)
    assert torch.equal(nn.CosineSimilarity()(a, b), F.cosine_similarity(a, b))
    assert torch.equal(nn.CosineSimilarity(dim=0, eps=1e-3)(a, b), F.cosine_similarity(a, b, 0, 1e-3))
    assert torch.equal(nn.PairwiseDistance()(a, b), F.pairwise_distance(a, b))
    m = nn.PairwiseDistance(p=1.0, eps=0.0, keepdim=True)
    assert (m.norm, m.eps, m.keepdim) == (1.0, 0.0, True)
    assert torch.equal(m(a, b), F.pairwise_distance(a, b, 1.0, 0.0, True))
    c = _r(4, 5) + 1
    loss = nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="sum")
    assert (loss.margin, loss.p, loss.eps, loss.swap, loss.reduction) == (0.5, 1, 1e-6, True, "sum")
    assert torch.equal(loss(a, b, c), F.triplet_margin_loss(a, b, c, 0.5, 1, swap=True, reduction="sum"))


def test_pixel_shuffle_modules_round_trip():
    x = _r(2, 8, 3, 5)
    y = nn.PixelShuffle(2)(x)
    assert y.shape == (2, 2, 6, 10)
    assert torch.equal(nn.PixelUnshuffle(2)(y), x)


def test_module_reprs():
    assert repr(nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    assert repr(nn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"
    assert repr(nn.CosineSimilarity(dim=0)) == "CosineSimilarity()"
    assert repr(nn.PairwiseDistance(p=1.0)) == "PairwiseDistance()"
    assert repr(nn.TripletMarginLoss(margin=2.0)) == "TripletMarginLoss()"


def test_triplet_margin_loss_legacy_reduction():
    a, b, c = _r(3, 4), _r(3, 4), _r(3, 4)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        m = nn.TripletMarginLoss(size_average=False)
    assert m.reduction == "sum"
    assert torch.equal(m(a, b, c), F.triplet_margin_loss(a, b, c, reduction="sum"))


def test_cosine_similarity_is_bounded_and_zero_vectors_give_zero():
    big = torch.full((2, 3), 1e18)
    out = F.cosine_similarity(big, big)
    assert out.tolist() == pytest.approx([1.0, 1.0])
    z = torch.zeros(2, 3, requires_grad=True)
    out = F.cosine_similarity(z, _r(2, 3))
    assert out.tolist() == [0.0, 0.0]
    out.sum().backward()
    assert bool(torch.isfinite(z.grad).all())


def test_cosine_similarity_integer_input_promotes():
    out = F.cosine_similarity(torch.tensor([1, 2]), torch.tensor([1.0, 2.0], dtype=torch.float64), dim=0)
    assert out.dtype == torch.float64 and out.item() == pytest.approx(1.0)


def test_upsample_modules():
    x = _r(1, 2, 3, 4)
    m = nn.Upsample(scale_factor=2, mode="bilinear")
    assert m.scale_factor == 2.0 and m.align_corners is None and m.name == "Upsample"
    assert torch.equal(m(x), F.interpolate(x, scale_factor=2.0, mode="bilinear"))
    assert repr(m) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.Upsample(size=(3, 4))) == "Upsample(size=(3, 4), mode='nearest')"
    assert repr(nn.Upsample(scale_factor=(2, 3))) == "Upsample(scale_factor=(2.0, 3.0), mode='nearest')"
    n = nn.UpsamplingNearest2d(scale_factor=2)
    assert repr(n) == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    assert torch.equal(n(x), F.interpolate(x, scale_factor=2))
    b = nn.UpsamplingBilinear2d(size=5)
    assert repr(b) == "UpsamplingBilinear2d(size=5, mode='bilinear')" and b.align_corners is True
    assert torch.equal(b(x), F.interpolate(x, size=5, mode="bilinear", align_corners=True))


def test_interpolate_nearest_repeats_pixels():
    x = torch.arange(4.0).reshape(1, 1, 2, 2)
    assert F.interpolate(x, scale_factor=2).tolist() == [[[[0, 0, 1, 1], [0, 0, 1, 1],
                                                           [2, 2, 3, 3], [2, 2, 3, 3]]]]


def test_interpolate_bilinear_align_corners_keeps_corners():
    x = _r(2, 3, 4, 5)
    y = F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)
    for i, j in ((0, 0), (-1, -1), (0, -1), (-1, 0)):
        assert torch.allclose(y[..., i, j], x[..., i, j])


def test_interpolate_gradient_sums_to_upstream():
    # each output is a convex combination of inputs (linear modes): the gradient of the sum
    # gives each input its total weight, which sum to the number of outputs
    x = _r(1, 2, 5, 6).double().requires_grad_()
    F.interpolate(x, size=(9, 4), mode="bilinear").sum().backward()
    assert abs(x.grad.sum().item() - 2 * 9 * 4) < 1e-9


@pytest.mark.parametrize("fn,mode", [("upsample", "nearest"), ("upsample_nearest", None),
                                     ("upsample_bilinear", None)])
def test_deprecated_upsample_functions_warn(fn, mode):
    x = _r(1, 1, 2, 3)
    with pytest.warns(UserWarning, match=f"`nn.functional.{fn}` is deprecated"):
        y = getattr(F, fn)(x, scale_factor=2)
    assert y.shape == (1, 1, 4, 6)


def test_interpolate_unsupported_names_itself():
    x = _r(1, 1, 4, 4)
    with pytest.raises(NotImplementedError, match="lanczos"):
        F.interpolate(x, scale_factor=2, mode="lanczos", antialias=True)
    with pytest.raises(NotImplementedError, match="area"):
        F.interpolate(_r(1, 1, 2, 2, 2), size=1, mode="area")


_ALIGN_WARNING = "Default grid_sample and affine_grid behavior has changed to align_corners=False"


def test_affine_grid_identity_samples_the_input_back():
    x = _r(2, 3, 4, 5)
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]).repeat(2, 1, 1)
    for align_corners in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align_corners)
        assert grid.shape == (2, 4, 5, 2)
        y = F.grid_sample(x, grid, align_corners=align_corners)
        assert torch.allclose(y, x, atol=1e-6)


def test_grid_sample_gradients_reach_theta():
    x = _r(1, 1, 5, 5)
    theta = torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]]], requires_grad=True)
    grid = F.affine_grid(theta, (1, 1, 3, 3), align_corners=False)
    F.grid_sample(x, grid, align_corners=False).sum().backward()
    assert theta.grad.shape == (1, 2, 3) and bool(theta.grad.abs().sum() > 0)


def test_grid_sample_nearest_gives_the_grid_a_zero_gradient():
    x = _r(1, 2, 3, 4)
    grid = (torch.rand(1, 2, 2, 2) * 2 - 1).requires_grad_()
    F.grid_sample(x, grid, mode="nearest", align_corners=False).sum().backward()
    assert grid.grad.tolist() == torch.zeros(1, 2, 2, 2).tolist()


def test_align_corners_default_warns():
    with pytest.warns(UserWarning, match=_ALIGN_WARNING):
        grid = F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match=_ALIGN_WARNING):
        F.grid_sample(torch.zeros(1, 1, 2, 2), grid)
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size grids"):
        F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True)


def test_grid_sample_every_mode_matches_torch(real_torch):
    """Bicubic and volumetric (5-D) sampling too: values and both gradients, float64."""
    rng = np.random.default_rng(0)
    cases = [(2, mode) for mode in ("bilinear", "nearest", "bicubic")] + [
        (3, mode) for mode in ("bilinear", "nearest")]
    for nd, mode in cases:
        for padding_mode in ("zeros", "border", "reflection"):
            for align_corners in (False, True):
                spatial = (3, 4) if nd == 2 else (3, 4, 5)
                x = rng.standard_normal((2, 3) + spatial)
                g = rng.uniform(-1.4, 1.4, size=(2,) + ((4, 3) if nd == 2 else (2, 3, 2)) + (nd,))
                results = []
                for lib in (torch, real_torch):
                    xt = lib.tensor(x, dtype=lib.float64, requires_grad=True)
                    gt = lib.tensor(g, dtype=lib.float64, requires_grad=True)
                    y = lib.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=padding_mode,
                                                      align_corners=align_corners)
                    w = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), dtype=lib.float64)
                    (y * w).sum().backward()
                    results.append([y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()])
                for ours, theirs in zip(*results):
                    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12,
                                               err_msg=f"{nd}-d {mode} {padding_mode} {align_corners}")


# --- errors: (id, call(torch-like module, F), exception, message), as PyTorch 2.x


ERROR_CASES = [
    ("cos_broadcast", lambda t, f: f.cosine_similarity(t.zeros(2, 3), t.zeros(4)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("cos_dim", lambda t, f: f.cosine_similarity(t.zeros(2, 3), t.zeros(2, 3), dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("cos_int", lambda t, f: f.cosine_similarity(t.tensor([1, 2]), t.tensor([1, 2]), dim=0), RuntimeError,
     "expected common dtype to be floating point, yet common dtype is Long"),
    ("pdist_broadcast", lambda t, f: f.pairwise_distance(t.zeros(2, 3), t.zeros(4)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("triplet_dims", lambda t, f: f.triplet_margin_loss(t.zeros(4, 3), t.zeros(4, 3), t.zeros(3)),
     RuntimeError, "The anchor, positive, and negative tensors are expected to have the same number of "
     "dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs"),
    ("triplet_margin", lambda t, f: f.triplet_margin_loss(t.zeros(4, 3), t.zeros(4, 3), t.zeros(4, 3), margin=0),
     ValueError, "margin must be greater than 0, got 0"),
    ("triplet_reduction",
     lambda t, f: f.triplet_margin_loss(t.zeros(4, 3), t.zeros(4, 3), t.zeros(4, 3), reduction="foo"),
     ValueError, "foo is not a valid value for reduction"),
    ("triplet_module_margin", lambda t, f: t.nn.TripletMarginLoss(margin=-1.0), ValueError,
     "TripletMarginLoss: expected margin to be greater than 0, got -1.0 instead"),
    ("shuffle_dims", lambda t, f: f.pixel_shuffle(t.zeros(2, 3), 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ("shuffle_channels", lambda t, f: f.pixel_shuffle(t.zeros(1, 6, 2, 3), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
     "upscale_factor, but input.size(-3)=6 is not divisible by 4"),
    ("shuffle_factor", lambda t, f: f.pixel_shuffle(t.zeros(1, 8, 2, 3), 0), RuntimeError,
     "pixel_shuffle expects a positive upscale_factor, but got 0"),
    ("shuffle_float_factor", lambda t, f: f.pixel_shuffle(t.zeros(1, 8, 2, 3), 2.0), TypeError,
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not float"),
    ("unshuffle_dims", lambda t, f: f.pixel_unshuffle(t.zeros(2, 4), 2), RuntimeError,
     "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ("unshuffle_factor", lambda t, f: f.pixel_unshuffle(t.zeros(1, 2, 4, 6), -1), RuntimeError,
     "pixel_unshuffle expects a positive downscale_factor, but got -1"),
    ("unshuffle_height", lambda t, f: f.pixel_unshuffle(t.zeros(1, 2, 5, 6), 2), RuntimeError,
     "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=5 is not "
     "divisible by 2"),
    ("unshuffle_width", lambda t, f: f.pixel_unshuffle(t.zeros(1, 2, 4, 5), 2), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=5 is not "
     "divisible by 2"),
    ("interp_both", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), 2, 2), ValueError,
     "only one of size or scale_factor should be defined"),
    ("interp_none", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4)), ValueError,
     "either size or scale_factor should be defined"),
    ("interp_size_len", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), size=(2,)), ValueError,
     "Input and output must have the same number of spatial dimensions, but got input with spatial "
     "dimensions of [3, 4] and output size of (2,)."),
    ("interp_size_float", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), size=(2.0, 3)), TypeError,
     "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], but got "
     "size with types [<class 'float'>, <class 'int'>]"),
    ("interp_scale_len", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), scale_factor=(2,)), ValueError,
     "Input and scale_factor must have the same number of spatial dimensions, but got input with "
     "spatial dimensions of [3, 4] and scale_factor of shape (2,)."),
    ("interp_zero_out", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), scale_factor=0.1), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 3, W: 4) output (H: 0, W: 0)"),
    ("interp_neg_size", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), size=(-1, 2)), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 3, W: 4) output (H: -1, W: 2)"),
    ("interp_1d_empty", lambda t, f: f.interpolate(t.zeros(1, 2, 0), scale_factor=2), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (W: 0) and output (W: 0)"),
    ("interp_3d_empty", lambda t, f: f.interpolate(t.zeros(1, 2, 1, 0, 2), scale_factor=2), RuntimeError,
     "Input and output sizes should be greater than 0, but got input (D: 1, H: 0, W: 2) output "
     "(D: 2, H: 0, W: 4)"),
    ("interp_no_channels", lambda t, f: f.interpolate(t.zeros(1, 0, 3), scale_factor=2), RuntimeError,
     "Non-empty 3D data tensor expected but got a tensor with sizes [1, 0, 3]"),
    ("interp_bad_mode", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), 2, mode="foo"), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | "
     "bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got foo)"),
    ("interp_2d_input", lambda t, f: f.interpolate(t.zeros(2, 3), scale_factor=2), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D)"),
    ("interp_linear_4d", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), 2, mode="linear"),
     NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    ("interp_trilinear_3d", lambda t, f: f.interpolate(t.zeros(1, 2, 3), 2, mode="trilinear"),
     NotImplementedError, "Got 3D input, but trilinear mode needs 5D input"),
    ("interp_bicubic_5d", lambda t, f: f.interpolate(t.zeros(1, 1, 2, 3, 4), 2, mode="bicubic"),
     NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 5D)"),
    ("interp_nearest_align", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), 2, align_corners=True),
     ValueError, "align_corners option can only be set with the interpolating modes: linear | bilinear "
     "| bicubic | trilinear"),
    ("interp_recompute_size",
     lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), 2, mode="bilinear", recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful with an explicit size."),
    ("interp_antialias_nearest",
     lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4), scale_factor=2, antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor"),
    ("interp_long_nearest", lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4).long(), scale_factor=2),
     NotImplementedError, "\"upsample_nearest2d_channels_last\" not implemented for 'Long'"),
    ("interp_long_linear",
     lambda t, f: f.interpolate(t.zeros(1, 2, 3).long(), scale_factor=2, mode="linear"),
     NotImplementedError, "\"compute_indices_weights_linear\" not implemented for 'Long'"),
    ("interp_bool_bicubic",
     lambda t, f: f.interpolate(t.zeros(1, 2, 3, 4).bool(), scale_factor=2, mode="bicubic"),
     NotImplementedError, "\"compute_indices_weights_cubic\" not implemented for 'Bool'"),
    ("affine_int_theta", lambda t, f: f.affine_grid(t.zeros(2, 2, 3).long(), (2, 3, 4, 5), align_corners=False),
     ValueError, "Expected theta to have floating point type, but got torch.int64"),
    ("affine_theta_shape", lambda t, f: f.affine_grid(t.zeros(2, 3), (2, 3, 4, 5), align_corners=False),
     ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3 for size (2, 3, 4, 5). Got "
     "torch.Size([2, 3])."),
    ("affine_theta_3d_shape",
     lambda t, f: f.affine_grid(t.zeros(2, 2, 3), (2, 3, 4, 5, 6), align_corners=False), ValueError,
     "Expected a batch of 3D affine matrices of shape Nx3x4 for size (2, 3, 4, 5, 6). Got torch.Size([2, 2, 3])."),
    ("affine_size_len", lambda t, f: f.affine_grid(t.zeros(2, 2, 3), (2, 3, 4), align_corners=False),
     NotImplementedError, "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
     "respectively. Got size (2, 3, 4)."),
    ("affine_zero_size", lambda t, f: f.affine_grid(t.zeros(2, 2, 3), (2, 3, 0, 5), align_corners=False),
     ValueError, "Expected non-zero, positive output size. Got (2, 3, 0, 5)"),
    ("affine_batch", lambda t, f: f.affine_grid(t.zeros(2, 2, 3), (3, 3, 4, 5), align_corners=False),
     RuntimeError, "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3]."),
    ("grid_mode", lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 1, 2), mode="foo"), ValueError,
     "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"),
    ("grid_padding",
     lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 1, 2), padding_mode="foo"), ValueError,
     "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'foo'"),
    ("grid_batch", lambda t, f: f.grid_sample(t.zeros(2, 1, 2, 2), t.zeros(1, 1, 1, 2), align_corners=False),
     RuntimeError, "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
     "[2, 1, 2, 2] and grid with sizes [1, 1, 1, 2]"),
    ("grid_last_dim", lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 1, 3), align_corners=False),
     RuntimeError, "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes "
     "[1, 1, 1, 3]"),
    ("grid_rank", lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 2), align_corners=False),
     RuntimeError, "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input "
     "with sizes [1, 1, 2, 2] and grid with sizes [1, 1, 2]"),
    ("grid_3d_input", lambda t, f: f.grid_sample(t.zeros(1, 1, 3), t.zeros(1, 2, 1), align_corners=False),
     RuntimeError, "grid_sampler(): expected 5D input and grid with same number of dimensions, but got input "
     "with sizes [1, 1, 3] and grid with sizes [1, 2, 1]"),
    ("grid_empty", lambda t, f: f.grid_sample(t.zeros(1, 1, 0, 2), t.zeros(1, 1, 1, 2), align_corners=False),
     RuntimeError, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
     "[1, 1, 0, 2] with dimension 2 being empty"),
    ("grid_bicubic_5d",
     lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2, 2), t.zeros(1, 1, 1, 1, 3), mode="bicubic",
                                align_corners=False),
     RuntimeError, "grid_sampler(): bicubic interpolation only supports 4D input"),
    ("grid_long", lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2).long(), t.zeros(1, 1, 1, 2).long(),
                                             align_corners=False),
     NotImplementedError, "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for 'Long'"),
    ("grid_dtypes", lambda t, f: f.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 1, 2).double(),
                                               align_corners=False),
     RuntimeError, "expected scalar type Float but found Double"),
]


def _check(lib, call, exc, msg):
    with pytest.raises(exc) as info:
        call(lib, lib.nn.functional)
    assert str(info.value).startswith(msg), str(info.value)


@pytest.mark.parametrize("call,exc,msg", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors(call, exc, msg):
    _check(torch, call, exc, msg)


@pytest.mark.parametrize("call,exc,msg", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(call, exc, msg):
    real = pytest.importorskip("torch")
    _check(real, call, exc, msg)


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 2, 5), {}), ("nearest", (1, 2, 3, 5), {}), ("nearest", (1, 1, 2, 3, 2), {}),
    ("nearest-exact", (1, 2, 3, 5), {}), ("linear", (2, 1, 5), {"align_corners": True}),
    ("bilinear", (1, 2, 3, 5), {}), ("bicubic", (1, 2, 3, 5), {"align_corners": True}),
    ("trilinear", (1, 1, 2, 3, 2), {}), ("bilinear", (1, 2, 8, 9), {"antialias": True}),
    ("bicubic", (1, 2, 8, 9), {"antialias": True}),
])
def test_interpolate_node_names_and_half_precision_as_pytorch(real_torch, mode, shape, kw):
    # one node named as PyTorch's; float16/bfloat16 computed in float32, rounded once
    size = [3] * (len(shape) - 2) if kw.get("antialias") else [7] * (len(shape) - 2)
    x = _r(*shape).numpy()
    for dtype in ("float32", "float16", "bfloat16"):
        if kw.get("antialias") and dtype != "float32":
            # PyTorch's antialiasing has no half-precision kernel
            name = {"float16": "Half", "bfloat16": "BFloat16"}[dtype]
            msg = f"\"compute_index_ranges_weights\" not implemented for '{name}'"
            with pytest.raises(NotImplementedError, match=msg):
                F.interpolate(torch.tensor(x, dtype=getattr(torch, dtype)), size=size, mode=mode, **kw)
            continue
        ours = F.interpolate(torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True),
                             size=size, mode=mode, **kw)
        pt = real_torch
        ref = pt.nn.functional.interpolate(
            pt.tensor(x, dtype=getattr(pt, dtype), requires_grad=True), size=size, mode=mode, **kw)
        assert ours.grad_fn.name() == ref.grad_fn.name()
        atol = 1e-6 if dtype == "float32" else 2e-2
        assert np.allclose(ours.detach().float().numpy(), ref.detach().float().numpy(), atol=atol)


def test_interpolate_to_the_same_size_is_a_new_tensor():
    # PyTorch returns a copy with its node, never the input itself
    x = _r(1, 1, 3, 4).requires_grad_()
    y = F.interpolate(x, size=(3, 4))
    assert y is not x and y.grad_fn.name() == "UpsampleNearest2DBackward0"
    with torch.no_grad():
        y[0, 0, 0, 0] = 100.0
    assert x[0, 0, 0, 0].item() != 100.0


def test_interpolate_double_backward_is_the_resampling_again():
    # the gradient of the adjoint (the backward) is the resampling itself
    x = _r(1, 1, 3, 4).double().requires_grad_()
    g = _r(1, 1, 5, 7).double().requires_grad_()
    y = F.interpolate(x, size=(5, 7), mode="bicubic")
    (gx,) = torch.autograd.grad(y, x, g, create_graph=True)
    assert gx.grad_fn.name() == "UpsampleBicubic2DBackwardBackward0"
    (gg,) = torch.autograd.grad(gx, g, torch.ones_like(gx))
    assert torch.allclose(gg, F.interpolate(torch.ones_like(x), size=(5, 7), mode="bicubic"))


@pytest.mark.parametrize("mode,shape,grid_shape", [
    ("bilinear", (2, 3, 4, 5), (2, 3, 2, 2)), ("bicubic", (1, 2, 4, 4), (1, 3, 3, 2)),
    ("nearest", (1, 2, 4, 4), (1, 3, 3, 2)), ("bilinear", (1, 2, 3, 4, 4), (1, 2, 3, 3, 3)),
])
def test_grid_sample_is_one_node_as_pytorch(mode, shape, grid_shape):
    # one GridSampler node whose gradients reach the input and the grid (zero for nearest)
    x = _r(*shape).requires_grad_()
    grid = (_r(*grid_shape) * 0.6).requires_grad_()
    y = F.grid_sample(x, grid, mode=mode, align_corners=False)
    assert y.grad_fn.name() == f"GridSampler{len(shape) - 2}DBackward0"
    assert y.shape == (shape[0], shape[1], *grid_shape[1:-1])
    y.sum().backward()
    assert x.grad.shape == x.shape and grid.grad.shape == grid.shape
    assert (grid.grad.abs().sum().item() == 0) == (mode == "nearest")


@pytest.mark.parametrize("nd,mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"), (3, "bilinear"),
                                     (3, "nearest")])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_differentiable_backward_matches_the_fused_one(nd, mode, padding_mode):
    # create_graph runs the composite backward (taps fixed, weights functions of the grid),
    # otherwise the fused kernel: the same gradients, from either
    gen = torch.Generator().manual_seed(nd * 7 + len(mode) + len(padding_mode))
    x = torch.randn(2, 3, *(4, 5, 3)[:nd], dtype=torch.float64, generator=gen).requires_grad_()
    grid = (torch.rand(2, *(3, 2, 2)[:nd], nd, dtype=torch.float64, generator=gen) * 2.8 - 1.4).requires_grad_()
    for align_corners in (False, True):
        y = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        w = torch.randn(y.shape, dtype=torch.float64, generator=gen)
        fused = torch.autograd.grad(y, (x, grid), w, retain_graph=True)
        composite = torch.autograd.grad(y, (x, grid), w, create_graph=True)
        assert composite[0].grad_fn.name() == f"GridSampler{nd}DBackwardBackward0"
        for a, b in zip(fused, composite):
            assert a.grad_fn is None
            torch.testing.assert_close(a, b.detach(), rtol=1e-12, atol=1e-12)
