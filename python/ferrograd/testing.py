"""``ferrograd.testing``: ``assert_close`` (and the deprecated ``assert_allclose``).

A port of ``torch.testing._comparison``: inputs are compared pairwise, recursing through
sequences and mappings; the pairs are None, booleans, Python numbers and tensor-likes, with
PyTorch's default tolerances per dtype and its error messages.
"""

import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

from ._core import Tensor, bool as bool_, float32, float64, int64
from ._factories import as_tensor
from ._functions import isclose

__all__ = ["assert_close", "assert_allclose"]

# {dtype: (rtol, atol)}; integer and bool dtypes compare exactly
_DTYPE_PRECISIONS = {
    float32: (1.3e-6, 1e-5),
    float64: (1e-7, 1e-7),
}

# promotion between ferrograd's dtypes (the larger rank wins)
_DTYPE_RANK = {bool_: 0, int64: 1, float32: 2, float64: 3}


class _ErrorMeta(Exception):
    """A comparison failure: the exception type and message to raise, and where it happened."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated_msg = self.msg
            if self.id:
                generated_msg += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated_msg) if callable(msg) else generated_msg
        return self.type(msg)


class _UnsupportedInputs(Exception):
    """Raised by a pair's constructor for inputs it does not handle (the next pair type is tried)."""


def _default_tolerances(*dtypes, dtype_precisions=None):
    dtype_precisions = dtype_precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[dtype_precisions.get(dtype, (0.0, 0.0)) for dtype in dtypes])
    return max(rtols), max(atols)


def _get_tolerances(*dtypes, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(
            ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, "
            f"but got no {'rtol' if rtol is None else 'atol'}.",
            id=id,
        )
    if rtol is not None and atol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _make_mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff, abs_diff_idx=None,
                       atol, rel_diff, rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def make_diff_msg(*, type, diff, idx, tol):
        if idx is None:
            msg = f"{type.title()} difference: {diff}"
        else:
            msg = f"Greatest {type} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += make_diff_msg(type="absolute", diff=abs_diff, idx=abs_diff_idx, tol=atol)
    msg += make_diff_msg(type="relative", diff=rel_diff, idx=rel_diff_idx, tol=rtol)
    return msg.strip()


def _make_scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _make_mismatch_msg(
        default_identifier="Scalars",
        identifier=identifier,
        extra=f"Expected {expected} but got {actual}.",
        abs_diff=abs_diff,
        atol=atol,
        rel_diff=rel_diff,
        rtol=rtol,
    )


def _make_tensor_mismatch_msg(actual, expected, matches, *, rtol, atol, identifier=None):
    def unravel_flat_index(flat_index):
        if not matches.shape:
            return ()
        inverse_index = []
        for size in tuple(matches.shape)[::-1]:
            flat_index, mod = divmod(flat_index, size)
            inverse_index.append(mod)
        return tuple(inverse_index[::-1])

    number_of_elements = matches.numel()
    total_mismatches = number_of_elements - int(matches.sum())
    extra = (
        f"Mismatched elements: {total_mismatches} / {number_of_elements} "
        f"({total_mismatches / number_of_elements:.1%})"
    )
    actual_flat = actual.flatten()
    expected_flat = expected.flatten()
    matches_flat = matches.flatten()
    if not actual.is_floating_point():
        actual_flat = actual_flat.to(int64)
        expected_flat = expected_flat.to(int64)

    abs_diff = (actual_flat - expected_flat).abs()
    abs_diff = abs_diff.masked_fill(matches_flat, 0)  # only mismatches count
    max_abs_diff, max_abs_diff_flat_idx = abs_diff.max(0)

    rel_diff = abs_diff / expected_flat.abs()
    rel_diff = rel_diff.masked_fill(matches_flat, 0)
    max_rel_diff, max_rel_diff_flat_idx = rel_diff.max(0)
    return _make_mismatch_msg(
        default_identifier="Tensor-likes",
        identifier=identifier,
        extra=extra,
        abs_diff=max_abs_diff.item(),
        abs_diff_idx=unravel_flat_index(int(max_abs_diff_flat_idx)),
        atol=atol,
        rel_diff=max_rel_diff.item(),
        rel_diff_idx=unravel_flat_index(int(max_rel_diff_flat_idx)),
        rtol=rtol,
    )


class _Pair:
    def __init__(self, actual, expected, *, id=(), **unknown_parameters):
        self.actual = actual
        self.expected = expected
        self.id = id

    @staticmethod
    def _check_inputs_isinstance(*inputs, cls):
        if not all(isinstance(input, cls) for input in inputs):
            raise _UnsupportedInputs

    def _fail(self, type, msg):
        raise _ErrorMeta(type, msg, id=self.id)

    def compare(self):
        raise NotImplementedError


class _NonePair(_Pair):
    def __init__(self, actual, expected, **other_parameters):
        if not (actual is None or expected is None):
            raise _UnsupportedInputs
        super().__init__(actual, expected, **other_parameters)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, *, id, **other_parameters):
        self._check_inputs_isinstance(actual, expected, cls=(bool, np.bool_))
        actual, expected = (bool(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other_parameters)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    _TYPE_TO_DTYPE = {int: int64, float: float64}

    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False, check_dtype=False,
                 **other_parameters):
        self._check_inputs_isinstance(actual, expected, cls=(int, float, np.number))
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        if any(isinstance(x, complex) for x in (actual, expected)):
            raise _ErrorMeta(NotImplementedError, "complex numbers are not supported by ferrograd", id=id)
        super().__init__(actual, expected, id=id, **other_parameters)
        dtypes = []
        for x in (actual, expected):
            if type(x) not in self._TYPE_TO_DTYPE:  # bool against int, as in PyTorch
                raise RuntimeError(
                    f"Originating a NumberPair() at item {''.join(str([item]) for item in id)} with\n\n"
                    f"{type(actual).__name__}(): {actual}\n\nand\n\n{type(expected).__name__}(): {expected}\n\n"
                    "resulted in the unexpected exception above."
                ) from KeyError(type(x))
            dtypes.append(self._TYPE_TO_DTYPE[type(x)])
        self.rtol, self.atol = _get_tolerances(*dtypes, rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_dtype = check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self._fail(
                AssertionError,
                f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.",
            )
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        tolerance = self.atol + self.rtol * abs(self.expected)
        if cmath.isfinite(abs_diff) and abs_diff <= tolerance:
            return
        self._fail(AssertionError, _make_scalar_mismatch_msg(self.actual, self.expected, rtol=self.rtol,
                                                             atol=self.atol))


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **other_parameters):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _UnsupportedInputs
        if not allow_subclasses and type(actual) is not type(expected):
            raise _UnsupportedInputs
        actual, expected = (self._to_tensor(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other_parameters)
        self.rtol, self.atol = _get_tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol, id=self.id)
        self.equal_nan = equal_nan
        self.check_device = check_device
        self.check_dtype = check_dtype
        self.check_layout = check_layout
        self.check_stride = check_stride

    @staticmethod
    def _to_tensor(tensor_like):
        if isinstance(tensor_like, Tensor):
            return tensor_like
        try:
            return as_tensor(tensor_like)
        except Exception:  # noqa: BLE001  (not a tensor-like: the next pair type is tried)
            raise _UnsupportedInputs from None

    def compare(self):
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if actual.dtype != expected.dtype:
            dtype = max(actual.dtype, expected.dtype, key=_DTYPE_RANK.__getitem__)
            actual, expected = actual.to(dtype), expected.to(dtype)
        self._compare_values(actual.detach(), expected.detach())

    def _compare_attributes(self, actual, expected):
        def raise_mismatch_error(attribute_name, actual_value, expected_value):
            self._fail(
                AssertionError,
                f"The values for attribute '{attribute_name}' do not match: {actual_value} != {expected_value}.",
            )

        if actual.shape != expected.shape:
            raise_mismatch_error("shape", actual.shape, expected.shape)
        if self.check_stride and actual.stride() != expected.stride():
            raise_mismatch_error("stride()", actual.stride(), expected.stride())
        if self.check_dtype and actual.dtype != expected.dtype:
            raise_mismatch_error("dtype", actual.dtype, expected.dtype)

    def _compare_values(self, actual, expected):
        if actual.dtype == bool_:
            matches = actual == expected
        else:
            matches = isclose(actual, expected, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
        if bool(matches.all()):
            return
        if actual.shape == ():
            msg = _make_scalar_mismatch_msg(actual.item(), expected.item(), rtol=self.rtol, atol=self.atol)
        else:
            msg = _make_tensor_mismatch_msg(actual, expected, matches, rtol=self.rtol, atol=self.atol)
        self._fail(AssertionError, msg)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, *, id=(), **options):
    """The pairs to compare, recursing through sequences and mappings."""
    sequence, mapping = collections.abc.Sequence, collections.abc.Mapping
    if (isinstance(actual, sequence) and not isinstance(actual, str)
            and isinstance(expected, sequence) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _ErrorMeta(
                AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", id=id
            )
        pairs = []
        for idx in range(len(actual)):
            pairs.extend(_originate_pairs(actual[idx], expected[idx], id=(*id, idx), **options))
        return pairs
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _ErrorMeta(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}",
                id=id,
            )
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_originate_pairs(actual[key], expected[key], id=(*id, key), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _UnsupportedInputs:
            continue
    raise _ErrorMeta(
        TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.", id=id
    )


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    r"""Asserts that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol * |expected|``.

    Inputs are tensors, Python numbers, booleans, None, or sequences / mappings of them
    (compared element by element). Without ``rtol`` and ``atol``, the tolerances are
    PyTorch's for the dtypes: float32 ``(1.3e-6, 1e-5)``, float64 ``(1e-7, 1e-7)``, exact for
    int64 and bool. Tensors must match in shape and (with ``check_dtype``) dtype; with
    ``check_stride`` also in strides. ``msg`` (a string, or a callable taking the generated
    message) replaces the message of the AssertionError.
    """
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                                 equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                                 check_layout=check_layout, check_stride=check_stride)
    except _ErrorMeta as error_meta:
        raise error_meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as error_meta:
            raise error_meta.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since PyTorch 1.12: use :func:`assert_close`."""
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
        "Please use `torch.testing.assert_close()` instead. "
        "You can find detailed upgrade instructions in https://github.com/pytorch/pytorch/issues/61844.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(
            actual.dtype, expected.dtype, dtype_precisions={float32: (1e-4, 1e-5), float64: (1e-5, 1e-8)}
        )
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
