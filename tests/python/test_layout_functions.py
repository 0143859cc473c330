"""The stacking / splitting / scatter / creation functions of ``ferrograd._layout_functions``
beyond the op table (tests/native/op_db.py): error types and messages, the creation functions,
warnings, in-place forms, integer dtypes. Each case runs on ferrograd against expected values;
where PyTorch is installed, the same case runs on it too (the cases are PyTorch's behaviour)."""

import re
import warnings

import numpy as np
import pytest

import ferrograd
from ferrograd.autograd import gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return np.asarray(t.detach().numpy())


def _ones(lib, *shape):
    return lib.ones(*shape)


def _ar(lib, *shape):
    return lib.arange(float(np.prod(shape))).reshape(*shape)


# --- errors: (id, call, exception type, message) -- message as PyTorch words it

ERRORS = [
    ("broadcast_to", lambda lib: lib.broadcast_to(_ones(lib, 3), (2,)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0.  "
     "Target sizes: [2].  Tensor sizes: [3]"),
    ("meshgrid_empty", lambda lib: lib.meshgrid(indexing="ij"), RuntimeError,
     "meshgrid expects a non-empty TensorList"),
    ("meshgrid_indexing", lambda lib: lib.meshgrid(_ones(lib, 3), indexing="foo"), RuntimeError,
     'torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo'),
    ("meshgrid_2d", lambda lib: lib.meshgrid(_ones(lib, 2, 3), indexing="ij"), RuntimeError,
     "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "),
    ("meshgrid_dtype", lambda lib: lib.meshgrid(_ones(lib, 3), lib.arange(2), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    ("hstack_empty", lambda lib: lib.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    ("vstack_empty", lambda lib: lib.vstack([]), RuntimeError, "vstack expects a non-empty TensorList"),
    ("dstack_empty", lambda lib: lib.dstack([]), RuntimeError, "dstack expects a non-empty TensorList"),
    ("column_stack_empty", lambda lib: lib.column_stack([]), RuntimeError,
     "column_stack expects a non-empty TensorList"),
    ("hstack_tensor", lambda lib: lib.hstack(_ones(lib, 3)), TypeError,
     "hstack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    ("column_stack_sizes", lambda lib: lib.column_stack([_ones(lib, 3), _ones(lib, 2)]), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 2 for tensor number 1 in the "
     "list."),
    ("atleast_3d_int", lambda lib: lib.atleast_3d(3), TypeError,
     "atleast_3d() received an invalid combination of arguments - got (int), but expected one of:"),
    ("block_diag_3d", lambda lib: lib.block_diag(_ones(lib, 2), _ones(lib, 2, 2, 2)), RuntimeError,
     "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 1 has 3 dimensions"),
    ("cartesian_prod_2d", lambda lib: lib.cartesian_prod(_ones(lib, 3), _ones(lib, 2, 3)), RuntimeError,
     "Expect a 1D vector, but got shape [2, 3]"),
    ("cartesian_prod_empty", lambda lib: lib.cartesian_prod(), RuntimeError, "meshgrid expects a non-empty TensorList"),
    ("combinations_2d", lambda lib: lib.combinations(_ones(lib, 2, 3)), RuntimeError,
     "Expect a 1D vector, but got shape [2, 3]"),
    ("combinations_r", lambda lib: lib.combinations(_ones(lib, 3), r=-1), RuntimeError,
     "Expect a non-negative number, but got -1"),
    # splitting
    ("tensor_split_zero", lambda lib: lib.tensor_split(_ones(lib, 3), 0), RuntimeError,
     "number of sections must be larger than 0, got 0"),
    ("tensor_split_0d", lambda lib: lib.tensor_split(lib.tensor(1.0), 2), RuntimeError,
     "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
    ("tensor_split_float", lambda lib: lib.tensor_split(_ones(lib, 3), lib.tensor([1.0])), RuntimeError,
     "tensor_split expected tensor_indices_or_sections to have dtype of long, but got Float"),
    ("tensor_split_2d", lambda lib: lib.tensor_split(_ones(lib, 3), lib.ones(2, 2, dtype=lib.int64)), RuntimeError,
     "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a "
     "tensor with 2 dims"),
    ("tensor_split_dim", lambda lib: lib.tensor_split(_ones(lib, 3), 2, dim=3), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 3)"),
    ("tensor_split_type", lambda lib: lib.tensor_split(_ones(lib, 3), 2.0), TypeError,
     "tensor_split() received an invalid combination of arguments - got (Tensor, float), but expected one of:"),
    ("hsplit_divisible", lambda lib: lib.hsplit(_ones(lib, 2, 6), 4), RuntimeError,
     "torch.hsplit attempted to split along dimension 1, but the size of the dimension 6 is not divisible by the "
     "split_size 4!"),
    ("hsplit_0d", lambda lib: lib.hsplit(lib.tensor(1.0), 2), RuntimeError,
     "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!"),
    ("hsplit_zero", lambda lib: lib.hsplit(_ones(lib, 6), 0), RuntimeError,
     "torch.hsplit attempted to split along dimension 0, but the size of the dimension 6 is not divisible by the "
     "split_size 0!"),
    ("vsplit_1d", lambda lib: lib.vsplit(_ones(lib, 4), 2), RuntimeError,
     "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!"),
    ("vsplit_divisible", lambda lib: lib.vsplit(_ones(lib, 4, 2), 3), RuntimeError,
     "torch.vsplit attempted to split along dimension 0, but the size of the dimension 4 is not divisible by the "
     "split_size 3!"),
    ("dsplit_2d", lambda lib: lib.dsplit(_ones(lib, 2, 3), 2), RuntimeError,
     "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 dimensions!"),
    ("split_with_sizes_sum", lambda lib: lib.split_with_sizes(_ones(lib, 3), [1, 1]), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 0), but got "
     "split_sizes=[1, 1]"),
    ("split_with_sizes_negative", lambda lib: lib.split_with_sizes(_ones(lib, 3), [1, -1, 3]), RuntimeError,
     "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[1, -1, 3]"),
    ("unsafe_chunk_zero", lambda lib: lib.unsafe_chunk(_ones(lib, 3), 0), RuntimeError,
     "chunk expects `chunks` to be greater than 0, got: 0"),
    ("ravel_int", lambda lib: lib.ravel(3), TypeError,
     "ravel(): argument 'input' (position 1) must be Tensor, not int"),
    # rotating, flipping
    ("rot90_dims", lambda lib: lib.rot90(_ones(lib, 2, 3), 1, [0, 1, 2]), RuntimeError,
     "expected total rotation dims == 2, but got dims = 3"),
    ("rot90_1d", lambda lib: lib.rot90(_ones(lib, 3)), RuntimeError,
     "expected total dims >= 2, but got total dims = 1"),
    ("rot90_same", lambda lib: lib.rot90(_ones(lib, 2, 3), 1, [0, -2]), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = -2"),
    ("rot90_range", lambda lib: lib.rot90(_ones(lib, 2, 3), 1, [0, 2]), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("fliplr_1d", lambda lib: lib.fliplr(_ones(lib, 3)), RuntimeError, "Input must be >= 2-d."),
    ("flipud_0d", lambda lib: lib.flipud(lib.tensor(1.0)), RuntimeError, "Input must be >= 1-d."),
    # repeat_interleave
    ("repeat_interleave_2d_repeats", lambda lib: lib.repeat_interleave(lib.tensor([[1, 2]])), RuntimeError,
     "repeat_interleave only accept 1D vector as repeat"),
    ("repeat_interleave_negative", lambda lib: lib.repeat_interleave(lib.tensor([1, -2])), RuntimeError,
     "repeats can not be negative"),
    ("repeat_interleave_float", lambda lib: lib.repeat_interleave(lib.tensor([1.0, 2.0])), NotImplementedError,
     "\"repeat_interleave_cpu\" not implemented for 'Float'"),
    ("repeat_interleave_size", lambda lib: lib.repeat_interleave(_ones(lib, 2, 3), lib.tensor([1, 2]), dim=1),
     RuntimeError, "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and "
                   "input.size(1) = 3"),
    ("repeat_interleave_flat_size", lambda lib: lib.repeat_interleave(_ones(lib, 2, 3), lib.tensor([1, 2])),
     RuntimeError, "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and "
                   "input.size(0) = 6"),
    ("repeat_interleave_int_negative", lambda lib: lib.repeat_interleave(_ones(lib, 2), -1), RuntimeError,
     "Repeats must be non-negative"),
    ("repeat_interleave_output_size", lambda lib: lib.repeat_interleave(_ones(lib, 2, 3), 2, dim=0, output_size=5),
     RuntimeError, "repeat_interleave: Invalid output_size, expected 4 but got 5"),
    ("repeat_interleave_tensor_output_size",
     lambda lib: lib.repeat_interleave(_ones(lib, 2, 3), lib.tensor([1, 2]), dim=0, output_size=4), RuntimeError,
     "allocated size does not match required size"),
    ("repeat_interleave_0d_dim", lambda lib: lib.repeat_interleave(lib.tensor(3.0), 2, dim=0), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    # diff
    ("diff_0d", lambda lib: lib.diff(lib.tensor(1.0)), RuntimeError,
     "diff expects input to be at least one-dimensional"),
    ("diff_order", lambda lib: lib.diff(_ones(lib, 3), n=-1), RuntimeError, "order must be non-negative but got -1"),
    ("diff_prepend_dims", lambda lib: lib.diff(_ones(lib, 2, 3), prepend=_ones(lib, 3)), RuntimeError,
     "diff expects prepend or append to be the same dimension as input"),
    ("diff_prepend_shape", lambda lib: lib.diff(_ones(lib, 2, 3), dim=0, append=_ones(lib, 1, 2)), RuntimeError,
     "diff expects the shape of tensor to prepend or append to match that of input except along the differencing "
     "dimension; input.size(1) = 3, but got tensor.size(1) = 2"),
    ("diff_prepend_float", lambda lib: lib.diff(_ones(lib, 2, 3), prepend=2.0), TypeError,
     "diff(): argument 'prepend' must be Tensor, not float"),
    # *_scatter
    ("select_scatter_shape", lambda lib: lib.select_scatter(_ones(lib, 2, 3), lib.zeros(2), 0, 1), RuntimeError,
     "expected src to have a size equal to the slice of self. src size = [2], slice size = [3]"),
    ("select_scatter_index", lambda lib: lib.select_scatter(_ones(lib, 2, 3), lib.zeros(3), 0, 2), IndexError,
     "select(): index 2 out of range for tensor of size [2, 3] at dimension 0"),
    ("select_scatter_0d", lambda lib: lib.select_scatter(lib.tensor(2.0), lib.tensor(3.0), 0, 0), IndexError,
     "select() cannot be applied to a 0-dim tensor."),
    ("slice_scatter_shape", lambda lib: lib.slice_scatter(_ones(lib, 2, 3), lib.zeros(2, 3), 1, 5, 10),
     RuntimeError, "expected src to have a size equal to the slice of self. src size = [2, 3], slice size = [2, 0]"),
    ("slice_scatter_step", lambda lib: lib.slice_scatter(_ones(lib, 2, 3), lib.zeros(2, 2), 1, 0, 3, 0),
     RuntimeError, "slice step must be positive"),
    ("diagonal_scatter_shape", lambda lib: lib.diagonal_scatter(_ones(lib, 2, 3), lib.zeros(3)), RuntimeError,
     "expected src to have a size equal to the slice of self. src size = [3], slice size = [2]"),
    # index_copy, index_reduce, put
    ("index_copy_count", lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([2, 0]), lib.zeros(2, 3)),
     IndexError, "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)"),
    ("index_copy_range", lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([3, 0]), lib.zeros(2, 2)),
     IndexError, "index_copy_(): index 3 is out of bounds for dimension 1 with size 3"),
    ("index_copy_negative", lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([-1, 0]), lib.zeros(2, 2)),
     IndexError, "index_copy_(): index -1 is out of bounds for dimension 1 with size 3"),
    ("index_copy_float_index",
     lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([2.0, 0.0]), lib.zeros(2, 2)), RuntimeError,
     "index_copy_(): Expected a long tensor for index, but got Float"),
    ("index_copy_2d_index", lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([[2, 0]]), lib.zeros(2, 2)),
     IndexError, "index_copy_(): Index should have dimension 1 or 0 (got 2)"),
    ("index_copy_dtype",
     lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([2, 0]), lib.zeros(2, 2, dtype=lib.float64)),
     RuntimeError, "index_copy_(): self and source expected to have the same dtype, but got (self) Float and (source) "
                   "Double"),
    ("index_copy_slices",
     lambda lib: lib.index_copy(_ones(lib, 2, 3, 4), 1, lib.tensor([2, 0]), lib.zeros(3, 2, 2)), RuntimeError,
     "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 2 4 at "
     "dimension 1 and source slice shape: 3 2 at dimension 0."),
    ("index_copy_ndim", lambda lib: lib.index_copy(_ones(lib, 2, 3), 1, lib.tensor([2, 0]), lib.zeros(2, 2, 1)),
     IndexError, "index_copy_(): When source and destination are not scalars, their dimensionality must match. "
                 "Source dimensionality (3), destination dimensionality (2)"),
    ("index_copy_scalar_source",
     lambda lib: lib.index_copy(_ones(lib, 3), 0, lib.tensor([1, 2]), lib.tensor(5.0)), IndexError,
     "index_copy_(): When source is scalar, index should have one element (got 2)"),
    ("index_reduce_sum",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2, 0]), lib.zeros(2, 2), "sum"), RuntimeError,
     "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    ("index_reduce_count",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2, 0, 2]), lib.zeros(2, 2), "amax"),
     RuntimeError, "index_reduce_(): Number of indices (3) should be equal to source.size(dim): (2), for dim: 1"),
    ("index_reduce_range",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2, 0, 5]), lib.zeros(2, 3), "amax"),
     IndexError, "index out of range in self"),
    ("index_reduce_float_index",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2.0]), lib.zeros(2, 1), "amax"), RuntimeError,
     "index_reduce_(): Expected dtype int32/int64 for index but got: Float"),
    ("index_reduce_dtype",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2]), lib.zeros(2, 1, dtype=lib.float64), "amax"),
     RuntimeError, "index_reduce_(): self (Float) and source (Double) must have the same scalar type"),
    ("index_reduce_shape",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([2, 0, 2]), lib.zeros(3, 3), "amax"),
     RuntimeError, "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                   "self.shape = [2, 3] source.shape = [3, 3]"),
    ("index_reduce_2d_index",
     lambda lib: lib.index_reduce(_ones(lib, 2, 3), 1, lib.tensor([[2, 0, 1]]), lib.zeros(2, 3), "amax"),
     IndexError, "index_reduce_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 3]"),
    ("put_range", lambda lib: lib.put(_ones(lib, 2, 3), lib.tensor([0, 6]), lib.tensor([5.0, 6.0])), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements."),
    ("put_negative_range", lambda lib: lib.put(_ones(lib, 2, 3), lib.tensor([-7]), lib.tensor([5.0])), IndexError,
     "out of range: tried to access index -7 on a tensor of 6 elements."),
    ("put_count", lambda lib: lib.put(_ones(lib, 2, 3), lib.tensor([0, 1]), lib.tensor([5.0, 6.0, 7.0])), IndexError,
     "put_(): Expected source and index to have the same number of elements, but got source.numel() = 3, "
     "index.numel() = 2"),
    ("put_float_index", lambda lib: lib.put(_ones(lib, 2, 3), lib.tensor([0.0]), lib.tensor([5.0])), RuntimeError,
     "put_(): Expected a long tensor for index, but got Float"),
    ("put_dtype", lambda lib: lib.put(_ones(lib, 2, 3), lib.tensor([0]), lib.tensor([5])), RuntimeError,
     "put_(): self and source expected to have the same dtype, but got self.dtype = Float and source.dtype = Long"),
    ("put_empty", lambda lib: lib.put(lib.ones(0), lib.tensor([0]), lib.tensor([5.0])), IndexError,
     "put_(): Tried to put elements into an empty tensor"),
    ("unravel_index_float", lambda lib: lib.unravel_index(lib.tensor([1.0]), (2, 3)), TypeError,
     "expected 'indices' to be integer dtype, but got torch.float32"),
    ("unravel_index_negative_shape", lambda lib: lib.unravel_index(lib.tensor([1]), (2, -3)), ValueError,
     "'shape' cannot have negative values, but got (2, -3)"),
    # unfold, fill_diagonal_, sum_to_size, fill
    ("unfold_size", lambda lib: _ones(lib, 2, 3).unfold(1, 4, 1), RuntimeError,
     "maximum size for tensor at dimension 1 is 3 but size is 4"),
    ("unfold_step", lambda lib: _ones(lib, 2, 3).unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    ("unfold_negative_size", lambda lib: _ones(lib, 2, 3).unfold(1, -1, 1), RuntimeError,
     "size is -1 but must be >= 0"),
    ("unfold_dim", lambda lib: _ones(lib, 2, 3).unfold(2, 2, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("fill_diagonal_1d", lambda lib: _ones(lib, 3).fill_diagonal_(2), RuntimeError, "dimensions must larger than 1"),
    ("fill_diagonal_unequal", lambda lib: _ones(lib, 2, 2, 3).fill_diagonal_(2), RuntimeError,
     "all dimensions of input must be of equal length"),
    ("sum_to_size", lambda lib: _ones(lib, 2, 3).sum_to_size(3, 3), RuntimeError,
     "size {[3, 3]} is not expandable to size {[2, 3]}."),
    ("sum_to_size_longer", lambda lib: _ones(lib, 3).sum_to_size(1, 3), RuntimeError,
     "size {[1, 3]} is not expandable to size {[3]}."),
    ("sum_to_size_missing", lambda lib: _ones(lib, 3).sum_to_size(), TypeError,
     'sum_to_size() missing 1 required positional arguments: "size"'),
    ("fill_1d_value", lambda lib: lib.fill(_ones(lib, 2, 3), lib.tensor([2.0])), RuntimeError,
     "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    ("narrow_copy_range", lambda lib: lib.narrow_copy(_ones(lib, 2, 3), 1, 2, 2), RuntimeError,
     "start (2) + length (2) exceeds dimension size (3)."),
    # creation
    ("logspace_steps", lambda lib: lib.logspace(0, 2, -1), RuntimeError, "number of steps must be non-negative"),
    ("hann_window_negative", lambda lib: lib.hann_window(-1), RuntimeError,
     "hann_window requires non-negative window_length, got window_length=-1"),
    ("kaiser_window_negative", lambda lib: lib.kaiser_window(-1), RuntimeError,
     "kaiser_window requires non-negative window_length, got window_length=-1"),
    ("hann_window_dtype", lambda lib: lib.hann_window(4, dtype=lib.int64), RuntimeError,
     "hann_window expects floating point dtypes, got: TensorOptions(dtype=long int, device=cpu"),
    ("blackman_window_float", lambda lib: lib.blackman_window(2.0), TypeError,
     "blackman_window(): argument 'window_length' (position 1) must be int, not float"),
    ("vander_2d", lambda lib: lib.vander(_ones(lib, 2, 2)), RuntimeError, "x must be a one-dimensional tensor."),
    ("vander_N", lambda lib: lib.vander(_ones(lib, 3), -1), RuntimeError, "N must be non-negative."),
    ("scalar_tensor_1d", lambda lib: lib.scalar_tensor(lib.tensor([2.0])), TypeError,
     "scalar_tensor(): argument 's' (position 1) must be Number, not Tensor"),
    ("scalar_tensor_str", lambda lib: lib.scalar_tensor("a"), TypeError,
     "scalar_tensor(): argument 's' (position 1) must be Number, not str"),
    ("range_step", lambda lib: lib.range(0, 3, 0), RuntimeError, "step must be nonzero"),
    ("range_sign", lambda lib: lib.range(3, 0), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    ("range_end", lambda lib: lib.range(5), TypeError, 'range() missing 1 required positional arguments: "end"'),
    ("empty_strided_dims", lambda lib: lib.empty_strided((2, 3), (1,)), RuntimeError,
     "dimensionality of sizes (2) must match dimensionality of strides (1)"),
    ("empty_strided_negative", lambda lib: lib.empty_strided((2, -3), (1, 2)), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("asarray_alias_dtype",
     lambda lib: lib.asarray(np.arange(3.0), dtype=lib.float32, copy=False), ValueError,
     "can't alias tensor with dtype 'Double' into dtype 'Float'."),
    ("asarray_alias_tensor", lambda lib: lib.asarray(_ones(lib, 3), dtype=lib.float64, copy=False), ValueError,
     "can't alias tensor with dtype 'Float' into dtype 'Double'."),
    ("asarray_int_grad", lambda lib: lib.asarray([1, 2], requires_grad=True), RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
]


def _raises(lib, fn, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match="^" + re.escape(msg)):
            fn(lib)


@pytest.mark.parametrize("fn,exc,msg", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_error(fn, exc, msg):
    _raises(ferrograd, fn, exc, msg)


@pytest.mark.parametrize("fn,exc,msg", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_error_matches_torch(fn, exc, msg):
    _raises(_torch(), fn, exc, msg)


# --- values of non-differentiable and creation cases: (id, call, expected)

CASES = [
    ("repeat_interleave_counts", lambda lib: lib.repeat_interleave(lib.tensor([2, 0, 1])), [0, 0, 2]),
    ("repeat_interleave_counts_output_size",
     lambda lib: lib.repeat_interleave(lib.tensor([1, 2]), output_size=3), [0, 1, 1]),
    ("repeat_interleave_int32", lambda lib: lib.repeat_interleave(
        lib.tensor([[1, 2], [3, 4]]), lib.tensor([1, 2], dtype=lib.int32), dim=0), [[1, 2], [3, 4], [3, 4]]),
    ("hstack_int", lambda lib: lib.hstack([lib.tensor([1, 2]), lib.tensor([3])]), [1, 2, 3]),
    ("vstack_bool", lambda lib: lib.vstack([lib.tensor([True, False]), lib.tensor([False, False])]),
     [[True, False], [False, False]]),
    ("cartesian_prod_int", lambda lib: lib.cartesian_prod(lib.tensor([1, 2]), lib.tensor([3, 4])),
     [[1, 3], [1, 4], [2, 3], [2, 4]]),
    ("combinations_int", lambda lib: lib.combinations(lib.tensor([1, 2, 3]), with_replacement=True),
     [[1, 1], [1, 2], [1, 3], [2, 2], [2, 3], [3, 3]]),
    ("block_diag_promotion", lambda lib: lib.block_diag(lib.tensor(2), lib.tensor([1.5, 2.0]),
                                                        lib.ones(1, 1, dtype=lib.int32)),
     [[2.0, 0, 0, 0], [0, 1.5, 2, 0], [0, 0, 0, 1]]),
    ("block_diag_none", lambda lib: lib.block_diag().shape, (1, 0)),
    ("diff_bool", lambda lib: lib.diff(lib.tensor([True, False, False])), [True, False]),
    ("diff_int", lambda lib: lib.diff(lib.tensor([1, 4, 9, 16, 30]), n=2), [2, 2, 7]),
    ("diff_int_float_prepend", lambda lib: lib.diff(lib.tensor([1, 4]), prepend=lib.tensor([0.5])), [0.5, 3.0]),
    ("tensor_split_int", lambda lib: [t.tolist() for t in lib.tensor_split(lib.arange(7), 3)],
     [[0, 1, 2], [3, 4], [5, 6]]),
    ("tensor_split_keyword", lambda lib: [t.tolist() for t in lib.tensor_split(lib.arange(4), indices=[1])],
     [[0], [1, 2, 3]]),
    ("tensor_split_sections_keyword",
     lambda lib: [t.tolist() for t in lib.arange(5).tensor_split(sections=2)], [[0, 1, 2], [3, 4]]),
    ("rot90_int", lambda lib: lib.rot90(lib.tensor([[1, 2], [3, 4]])), [[2, 4], [1, 3]]),
    ("unravel_index", lambda lib: [t.tolist() for t in lib.unravel_index(lib.tensor([[1, 2], [7, 23]]), (3, 2, 4))],
     [[[0, 0], [0, 2]], [[0, 0], [1, 1]], [[1, 2], [3, 3]]]),
    ("unravel_index_negative", lambda lib: [t.tolist() for t in lib.unravel_index(lib.tensor([-1, -7]), (2, 3))],
     [[1, 1], [2, 2]]),
    ("unravel_index_int_shape", lambda lib: [t.tolist() for t in lib.unravel_index(lib.tensor(5), 3)], [2]),
    ("unravel_index_empty_shape", lambda lib: lib.unravel_index(lib.tensor([0]), ()), ()),
    ("index_reduce_int", lambda lib: lib.index_reduce(lib.tensor([1, 2, 3]), 0, lib.tensor([0, 0]),
                                                      lib.tensor([5, 7]), "amax", include_self=False), [7, 2, 3]),
    ("put_accumulate", lambda lib: lib.put(lib.zeros(2, 2), lib.tensor([0, 0, 3]), lib.tensor([1.0, 2.0, 3.0]),
                                           accumulate=True), [[3.0, 0.0], [0.0, 3.0]]),
    ("fill_diagonal_wrap", lambda lib: lib.zeros(7, 3).fill_diagonal_(1, wrap=True),
     [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    ("fill_diagonal_int", lambda lib: lib.zeros(2, 2, dtype=lib.int64).fill_diagonal_(2.7), [[2, 0], [0, 2]]),
    ("fill_int", lambda lib: lib.fill(lib.ones(2, dtype=lib.int64), 2.7), [2, 2]),
    ("narrow_copy_negative_start", lambda lib: lib.narrow_copy(lib.arange(6).reshape(2, 3), 1, -2, 2),
     [[1, 2], [4, 5]]),
    ("slice_copy_step", lambda lib: lib.slice_copy(lib.arange(7), 0, 1, None, 3), [1, 4]),
    ("view_copy_dtype", lambda lib: lib.view_copy(lib.ones(2), lib.float32), [1.0, 1.0]),
    ("logspace", lambda lib: lib.logspace(0, 2, 3), [1.0, 10.0, 100.0]),
    ("logspace_base_int", lambda lib: lib.logspace(0, 3, 4, base=2, dtype=lib.int64), [1, 2, 4, 8]),
    ("logspace_empty", lambda lib: lib.logspace(0, 2, 0).shape, (0,)),
    ("logspace_one", lambda lib: lib.logspace(1, 2, 1), [10.0]),
    ("hann_window", lambda lib: lib.hann_window(4, dtype=lib.float64), [0.0, 0.5, 1.0, 0.5]),
    ("hann_window_symmetric", lambda lib: lib.hann_window(5, False, dtype=lib.float64), [0.0, 0.5, 1.0, 0.5, 0.0]),
    ("hann_window_one", lambda lib: lib.hann_window(1), [1.0]),
    ("hann_window_zero", lambda lib: lib.hann_window(0).shape, (0,)),
    ("hamming_window", lambda lib: lib.hamming_window(3, False, dtype=lib.float64), [0.08, 1.0, 0.08]),
    ("hamming_window_alpha", lambda lib: lib.hamming_window(3, False, 0.5, 0.4, dtype=lib.float64), [0.1, 0.9, 0.1]),
    ("blackman_window", lambda lib: lib.blackman_window(3, False, dtype=lib.float64), [0.0, 1.0, 0.0]),
    ("bartlett_window", lambda lib: lib.bartlett_window(4, dtype=lib.float64), [0.0, 0.5, 1.0, 0.5]),
    ("kaiser_window", lambda lib: lib.kaiser_window(3, False, 2.0, dtype=lib.float64),
     [1 / np.i0(2.0), 1.0, 1 / np.i0(2.0)]),
    ("vander_int", lambda lib: lib.vander(lib.tensor([1, 2, 3])), [[1, 1, 1], [4, 2, 1], [9, 3, 1]]),
    ("vander_bool", lambda lib: lib.vander(lib.tensor([True, False])), [[1, 1], [0, 1]]),
    ("vander_N0", lambda lib: lib.vander(lib.tensor([1.0, 2.0]), 0).shape, (2, 0)),
    ("vander_N1", lambda lib: lib.vander(lib.tensor([1.0, 2.0]), 1), [[1.0], [1.0]]),
    ("scalar_tensor", lambda lib: lib.scalar_tensor(3), 3.0),
    ("scalar_tensor_bool", lambda lib: lib.scalar_tensor(True), 1.0),
    ("scalar_tensor_0d", lambda lib: lib.scalar_tensor(lib.tensor(2.5)), 2.5),
    ("scalar_tensor_int", lambda lib: lib.scalar_tensor(3, dtype=lib.int64), 3),
    ("range", lambda lib: lib.range(0, 3), [0.0, 1.0, 2.0, 3.0]),
    ("range_step", lambda lib: lib.range(0, 1, 0.3), [0.0, 0.3, 0.6, 0.9]),
    ("range_negative", lambda lib: lib.range(3, 0, -1.5), [3.0, 1.5, 0.0]),
    ("range_int", lambda lib: lib.range(1, 4, dtype=lib.int64), [1, 2, 3, 4]),
    ("empty_strided", lambda lib: lib.empty_strided((2, 3), (1, 2)).stride(), (1, 2)),
    ("empty_strided_zero", lambda lib: lib.empty_strided((2, 3), (0, 0)).stride(), (0, 0)),
    ("empty_strided_empty", lambda lib: lib.empty_strided((2, 0), (1, 2)).shape, (2, 0)),
    ("asarray_list", lambda lib: lib.asarray([1, 2]), [1, 2]),
    ("asarray_scalar", lambda lib: lib.asarray(3.5), 3.5),
    ("asarray_tuple_dtype", lambda lib: lib.asarray((1, 2), dtype=lib.float64), [1.0, 2.0]),
    ("asarray_0d_tensors", lambda lib: lib.asarray([lib.tensor(1.0), lib.tensor(2.0)]), [1.0, 2.0]),
]

DTYPES = {
    "repeat_interleave_counts": "int64", "hstack_int": "int64", "vstack_bool": "bool", "block_diag_promotion":
    "float32", "diff_bool": "bool", "diff_int": "int64", "diff_int_float_prepend": "float32", "fill_int": "int64",
    "logspace": "float32", "logspace_base_int": "int64", "hann_window_one": "float32", "vander_int": "int64",
    "vander_bool": "int64", "scalar_tensor": "float32", "scalar_tensor_bool": "float32", "scalar_tensor_int": "int64",
    "range": "float32", "range_int": "int64", "asarray_list": "int64", "asarray_scalar": "float32",
    "index_reduce_int": "int64", "vander_N1": "float32",
}


def _check_case(lib, name, fn, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # range's deprecation warning
        out = fn(lib)
    if isinstance(out, lib.Tensor):
        if name in DTYPES:
            assert str(out.dtype) == "torch." + DTYPES[name]
        np.testing.assert_allclose(_np(out), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-7)
    else:
        assert tuple(out) == tuple(expected) if isinstance(expected, tuple) else out == expected


@pytest.mark.parametrize("name,fn,expected", [pytest.param(*c, id=c[0]) for c in CASES])
def test_case(name, fn, expected):
    _check_case(ferrograd, name, fn, expected)


@pytest.mark.parametrize("name,fn,expected", [pytest.param(*c, id=c[0]) for c in CASES])
def test_case_matches_torch(name, fn, expected):
    _check_case(_torch(), name, fn, expected)


# --- creation functions against PyTorch over a range of arguments


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(name, n, periodic, dtype):
    torch = _torch()
    ours = getattr(ferrograd, name)(n, periodic, dtype=getattr(ferrograd, dtype), requires_grad=True)
    theirs = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
    assert str(ours.dtype) == str(theirs.dtype) and ours.requires_grad and ours.is_leaf
    np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-5, atol=2e-7)


@pytest.mark.parametrize("args", [(0, 2, 5), (-1.5, 2, 7, 2.0), (2, -2, 4, 3), (0, 1, 1)])
def test_logspace_matches_torch(args):
    torch = _torch()
    for dtype in ("float32", "float64"):
        ours = ferrograd.logspace(*args, dtype=getattr(ferrograd, dtype))
        theirs = torch.logspace(*args, dtype=getattr(torch, dtype))
        np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("args", [(0, 3), (0.5, 3.2, 0.7), (5, -1, -2), (-1, 1, 0.25)])
def test_range_matches_torch(args):
    torch = _torch()
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ours = ferrograd.range(*args)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        theirs = torch.range(*args)
    assert ours.dtype == ferrograd.float32
    np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-6)


# --- warnings


def test_meshgrid_warns_without_indexing():
    a, b = ferrograd.tensor([1.0, 2.0, 3.0]), ferrograd.tensor([4.0, 5.0])
    with pytest.warns(UserWarning, match="torch.meshgrid: in an upcoming release, it will be required to pass the "
                                         "indexing argument."):
        x, y = ferrograd.meshgrid(a, b)
    assert x.shape == (3, 2) and y.shape == (3, 2)  # "ij"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = ferrograd.meshgrid([a, b], indexing="xy")
    np.testing.assert_array_equal(_np(x), [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(_np(y), [[4, 4, 4], [5, 5, 5]])


def test_range_warns():
    with pytest.warns(UserWarning, match=re.escape("torch.range is deprecated and will be removed in a future "
                                                   "release because its behavior is inconsistent with Python's "
                                                   "range builtin. Instead, use torch.arange, which produces values "
                                                   "in [start, end).")):
        ferrograd.range(0, 2)


# --- in-place forms write into the tensor and return it


def test_inplace_forms():
    x = ferrograd.zeros(2, 3)
    assert x.index_copy_(1, ferrograd.tensor([2, 0]), ferrograd.tensor([[1.0, 2.0], [3.0, 4.0]])) is x
    np.testing.assert_array_equal(_np(x), [[2, 0, 1], [4, 0, 3]])
    assert x.put_(ferrograd.tensor([1, 1]), ferrograd.tensor([5.0, 6.0]), accumulate=True) is x
    np.testing.assert_array_equal(_np(x), [[2, 11, 1], [4, 0, 3]])
    assert x.index_reduce_(1, ferrograd.tensor([0, 0]), ferrograd.ones(2, 2) * 7, "amin") is x
    np.testing.assert_array_equal(_np(x), [[2, 11, 1], [4, 0, 3]])
    assert x.fill_diagonal_(-1.0) is x
    np.testing.assert_array_equal(_np(x), [[-1, 11, 1], [4, -1, 3]])
    view = ferrograd.zeros(3, 4).t()  # the in-place forms write through a non-contiguous view
    view.fill_diagonal_(1.0)
    np.testing.assert_array_equal(_np(view), np.eye(4, 3))
    assert ferrograd.fill_(x, 2.0) is x
    np.testing.assert_array_equal(_np(x), np.full((2, 3), 2.0))


def test_inplace_forms_record_gradients():
    leaf = ferrograd.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    src = ferrograd.tensor([5.0], requires_grad=True)
    y = leaf * 1
    y.put_(ferrograd.tensor([3]), src)
    y.sum().backward()
    np.testing.assert_array_equal(_np(leaf.grad), [[1, 1], [1, 0]])
    np.testing.assert_array_equal(_np(src.grad), [1])


# --- unfold is a view, with PyTorch's values and gradient


def test_unfold_is_a_view_with_overlapping_windows():
    x = ferrograd.arange(10.0).reshape(2, 5)
    windows = x.unfold(1, 3, 2)
    np.testing.assert_array_equal(_np(windows), [[[0, 1, 2], [2, 3, 4]], [[5, 6, 7], [7, 8, 9]]])
    assert windows.stride() == (5, 2, 1) and not windows.is_contiguous()
    windows[0, 0, 0] = 100.0
    assert x[0, 0].item() == 100.0  # writes reach the input, as in PyTorch
    # the element two windows share gets both windows' gradients
    leaf = ferrograd.arange(5.0, requires_grad=True)
    leaf.unfold(0, 3, 2).sum().backward()
    assert leaf.grad.tolist() == [1.0, 1.0, 2.0, 1.0, 1.0]
    assert type(leaf.unfold(0, 2, 1).grad_fn).__name__ == "UnfoldBackward0"
    t = ferrograd.randn(3, 4, dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(lambda a: a.unfold(1, 2, 1) * 1.5, (t,))
    assert gradgradcheck(lambda a: a.unfold(0, 2, 2) ** 2, (t,))


def test_sum_to_size_returns_self_when_equal():
    x = ferrograd.ones(2, 3)
    assert x.sum_to_size(2, 3) is x


# --- vander's gradients (the op table skips them: PyTorch's backward fails)


@pytest.mark.parametrize("x,N,increasing", [
    ([0.5, -1.2, 2.0], None, False), ([1.5, 0.0, -2.0], 4, True), ([0.3, 0.7], 5, False),
])
def test_vander_gradients(x, N, increasing):
    t = ferrograd.tensor(x, dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(lambda a: ferrograd.vander(a, N, increasing), (t,))
    assert gradgradcheck(lambda a: ferrograd.vander(a, N, increasing), (t,))


def test_vander_gradient_values():
    x = ferrograd.tensor([2.0, -1.0], dtype=ferrograd.float64, requires_grad=True)
    ferrograd.vander(x, 3).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2 * 2.0 + 1, 2 * -1.0 + 1])  # d/dx (x^2 + x + 1)


# --- asarray: memory sharing, copies, requires_grad


def test_asarray_shares_numpy_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = ferrograd.asarray(a)
    a[0, 0] = 9.0
    assert t.dtype == ferrograd.float64 and t[0, 0].item() == 9.0
    c = ferrograd.asarray(a, copy=True)
    a[0, 0] = 8.0
    assert c[0, 0].item() == 9.0
    d = ferrograd.asarray(a, dtype=ferrograd.float32)  # a dtype change copies
    a[0, 0] = 7.0
    assert d.dtype == ferrograd.float32 and d[0, 0].item() == 8.0


def test_asarray_tensors():
    x = ferrograd.ones(3)
    assert ferrograd.asarray(x) is x
    assert ferrograd.asarray(x, copy=True).data_ptr() != x.data_ptr()
    assert ferrograd.asarray(x, dtype=ferrograd.float64).dtype == ferrograd.float64
    y = ferrograd.asarray(x, requires_grad=True)
    assert y is x and x.requires_grad
    z = ferrograd.asarray(x, requires_grad=False)
    assert not z.requires_grad and z.data_ptr() == x.data_ptr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the once-only warning of an unspecified requires_grad)
        w = ferrograd.asarray(x, copy=True)
    assert w.requires_grad and not w.is_leaf  # the copy keeps the graph


def test_asarray_requires_grad_default_warns_once(monkeypatch):
    from ferrograd import _layout_functions

    monkeypatch.setattr(_layout_functions, "_asarray_grad_warned", False)
    x = ferrograd.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert ferrograd.asarray(x) is x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferrograd.asarray(x)
        ferrograd.asarray(x, requires_grad=False)


def test_index_reduce_warns_once(monkeypatch):
    from ferrograd import _layout_functions

    monkeypatch.setattr(_layout_functions, "_index_reduce_warned", False)
    args = (0, ferrograd.tensor([0]), ferrograd.ones(1), "prod")
    with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
        ferrograd.index_reduce(ferrograd.ones(2), *args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferrograd.index_reduce(ferrograd.ones(2), *args)


# --- the copies are contiguous and independent


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.t_copy(x), lambda lib, x: lib.transpose_copy(x, 0, 1),
    lambda lib, x: lib.permute_copy(x, (1, 0)), lambda lib, x: lib.alias_copy(x),
    lambda lib, x: lib.expand_copy(x[:1], (3, 4)), lambda lib, x: lib.slice_copy(x, 1, 0, None, 2),
])
def test_copies_are_contiguous(call):
    x = ferrograd.arange(12.0).reshape(3, 4)
    out = call(ferrograd, x)
    assert out.is_contiguous()
    before = _np(x).copy()
    out.fill_(-1.0)
    np.testing.assert_array_equal(_np(x), before)


def test_empty_strided_matches_torch_layout():
    torch = _torch()
    for size, stride in [((2, 3), (1, 2)), ((4,), (3,)), ((2, 2), (0, 1))]:
        ours = ferrograd.empty_strided(size, stride, dtype=ferrograd.float64)
        theirs = torch.empty_strided(size, stride, dtype=torch.float64)
        assert ours.stride() == theirs.stride() and tuple(ours.shape) == tuple(theirs.shape)
