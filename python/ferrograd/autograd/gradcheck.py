"""Finite-difference gradient checking, following ``torch.autograd.gradcheck``.

Only PyTorch's *slow*, backward-mode path is implemented:

* the numerical Jacobian comes from central finite differences, perturbing one
  element of one differentiable input at a time by ``+-eps``;
* the analytical Jacobian comes from ``autograd.grad(output, inputs,
  grad_output, retain_graph=True, allow_unused=True)`` with one-hot
  ``grad_output`` (one row of the Jacobian per call), computed twice to detect
  non-determinism;
* both Jacobians have shape ``(input.numel(), output.numel())`` and are compared
  with ``allclose(analytical, numerical, rtol, atol)`` for every
  (differentiable output, differentiable input) pair.

Afterwards, like PyTorch, it checks that the backward is multiplied by
``grad_output`` (zero ``grad_output`` -> zero gradients of the right dtype and
size) and, if ``check_undefined_grad``, that backward copes with all-zero output
gradients.  (PyTorch uses an internal "undefined grad" for that last check; we
use zero tensors, the closest public-API equivalent.)

The module only touches the public PyTorch-compatible API of the library
returned by :func:`_lib` (``tensor``, ``zeros_like``, ``autograd.grad``,
``Tensor.detach/numpy/shape/dtype/requires_grad``) plus NumPy, so the very same
code can be run against real PyTorch by putting ``torch`` into
``sys.modules['ferrograd']``.

Differences from PyTorch worth knowing:

* perturbed inputs are rebuilt from NumPy data as fresh (contiguous) tensors
  with the input's dtype and ``requires_grad`` instead of being modified in
  place through ``.data``; strides of non-contiguous inputs are therefore not
  preserved during the numerical evaluation (the analytical one uses the
  inputs as given);
* non-floating outputs (e.g. indices) are ignored wherever they appear in the
  output tuple (PyTorch mis-aligns outputs when an integer output precedes a
  differentiable one);
* complex inputs/outputs, ``fast_mode``, forward AD, batched grad and
  ``masked=True`` raise ``NotImplementedError``.
"""

import sys
import warnings

import numpy as np

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    r"""Error raised by :func:`gradcheck`."""


FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations, this failure might be
expected; call gradcheck with `nondet_tol=<tol>` as a keyword argument.
"""


# --------------------------------------------------------------------------
# library namespace (pluggable so the module can be tested against torch)
# --------------------------------------------------------------------------

_LIB_OVERRIDE = None


def _lib():
    """The tensor library the checks run against (``ferrograd`` by default)."""
    if _LIB_OVERRIDE is not None:
        return _LIB_OVERRIDE
    return sys.modules["ferrograd"]  # (or torch, put there in its place)


def _is_tensor(x):
    return isinstance(x, _lib().Tensor)


def _is_complex(t):
    f = getattr(t, "is_complex", None)
    return bool(f()) if f is not None else False


def _is_float_or_complex(t):
    return _is_tensor(t) and (t.is_floating_point() or _is_complex(t))


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _diff_input_indices(tupled_inputs):
    return [i for i, a in enumerate(tupled_inputs) if _is_tensor(a) and a.requires_grad]


def _differentiable_outputs(func_out):
    return tuple(o for o in _as_tuple(func_out) if _is_tensor(o) and o.requires_grad)


def _to_numpy(t):
    """Detached, owned NumPy copy of a tensor (keeps its dtype)."""
    return np.array(t.detach().numpy(), copy=True)


def _numel(t):
    n = 1
    for s in t.shape:
        n *= int(s)
    return n


def _shape(t):
    return tuple(int(s) for s in t.shape)


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "").replace("ferrograd.", "")


def _np_dtype(dtype):
    """NumPy dtype corresponding to a library dtype (float64 if unknown)."""
    try:
        return np.dtype(_dtype_name(dtype).lower())
    except TypeError:
        return np.dtype(np.float64)


def _as_lib_tensor(arr, dtype):
    return _lib().tensor(np.array(arr, order="C", copy=True), dtype=dtype)


# --------------------------------------------------------------------------
# input / output validation
# --------------------------------------------------------------------------


def _check_inputs(tupled_inputs):
    lib = _lib()
    double_types = [lib.float64]
    if hasattr(lib, "complex128"):
        double_types.append(lib.complex128)
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp.dtype not in double_types:
                warnings.warn(
                    f"Input #{idx} requires gradient and "
                    "is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    stacklevel=3,
                )
            if _is_complex(inp):
                raise NotImplementedError(
                    "gradcheck: complex inputs are not supported by ferrograd's gradcheck"
                )
            stride = getattr(inp, "stride", None)
            if stride is not None:
                strides = tuple(stride())
                if not all(st > 0 or sz <= 1 for st, sz in zip(strides, _shape(inp))):
                    raise RuntimeError(
                        f"The {idx}th input has a dimension with stride 0. gradcheck only "
                        "supports inputs that are non-overlapping to be able to "
                        "compute the numerical gradients correctly. You should call "
                        ".contiguous on the input before passing it to gradcheck."
                    )
            any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )
    return True


def _check_outputs(outputs):
    for o in outputs:
        if _is_complex(o):
            raise NotImplementedError(
                "gradcheck: complex outputs are not supported by ferrograd's gradcheck"
            )


def _check_outputs_same_dtype_and_shape(output1, output2, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    if output1.shape != output2.shape:
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" shapes {output1.shape} and {output2.shape}."
        )
    if output1.dtype != output2.dtype:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" dtypes {output1.dtype} and {output2.dtype}."
        )


# --------------------------------------------------------------------------
# numerical Jacobian
# --------------------------------------------------------------------------


def _get_numerical_jacobian(func, tupled_inputs, func_out, eps):
    """Central-difference Jacobians.

    Returns ``jac[k][i]``: for the k-th input requiring grad and the i-th output
    of ``func`` a NumPy array of shape ``(input.numel(), output.numel())`` in the
    output's dtype, or ``None`` if output i is not a floating-point tensor.
    """
    lib = _lib()
    func_out = _as_tuple(func_out)
    float_out = [_is_float_or_complex(o) for o in func_out]
    jacobians = []
    for inp_idx in _diff_input_indices(tupled_inputs):
        inp = tupled_inputs[inp_idx]
        base = np.array(_to_numpy(inp), order="C", copy=True)
        flat = base.reshape(-1)
        n_in = flat.size
        per_out = [
            np.zeros((n_in, _numel(o)), dtype=_np_dtype(o.dtype)) if float_out[i] else None
            for i, o in enumerate(func_out)
        ]

        def evaluate(arr):
            new_inp = lib.tensor(arr, dtype=inp.dtype, requires_grad=bool(inp.requires_grad))
            args = list(tupled_inputs)
            args[inp_idx] = new_inp
            return _as_tuple(func(*args))

        for d_idx in range(n_in):
            idx = tuple(int(i) for i in np.unravel_index(d_idx, base.shape))
            orig = flat[d_idx]
            pert = flat.copy()
            pert[d_idx] = orig - eps
            outa = evaluate(pert.reshape(base.shape))
            pert[d_idx] = orig + eps
            outb = evaluate(pert.reshape(base.shape))
            if len(outa) != len(func_out) or len(outb) != len(func_out):
                raise AssertionError(
                    "Expected `func` to return the same number of outputs when inputs are "
                    f"perturbed on index {idx} by {eps}"
                )
            for i, (a, b) in enumerate(zip(outa, outb)):
                if per_out[i] is None:
                    continue
                _check_outputs_same_dtype_and_shape(a, b, eps=eps, idx=idx)
                odt = per_out[i].dtype
                a_np = _to_numpy(a).astype(odt, copy=False)
                b_np = _to_numpy(b).astype(odt, copy=False)
                col = (b_np - a_np) / odt.type(2 * eps)
                per_out[i][d_idx, :] = col.reshape(-1)
        jacobians.append(per_out)
    return jacobians


def _check_no_differentiable_outputs(func, tupled_inputs, func_out, eps):
    for per_out in _get_numerical_jacobian(func, tupled_inputs, func_out, eps):
        for jac in per_out:
            if jac is not None and np.count_nonzero(jac) > 0:
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


# --------------------------------------------------------------------------
# analytical Jacobian
# --------------------------------------------------------------------------


def _compute_analytical_jacobian_rows(vjp_fn, output):
    """rows[k][j]: gradient wrt the k-th diff input for one-hot grad_output e_j."""
    n_out = _numel(output)
    shape = _shape(output)
    np_dt = _np_dtype(output.dtype)
    rows = []
    for j in range(n_out):
        onehot = np.zeros(n_out, dtype=np_dt)
        onehot[j] = 1
        grad_out = _as_lib_tensor(onehot.reshape(shape), output.dtype)
        grad_inputs = vjp_fn(grad_out)
        for k, d_x in enumerate(grad_inputs):
            if j == 0:
                rows.append([])
            rows[k].append(d_x if _is_tensor(d_x) else None)
    return rows


def _stack_and_check_tensors(rows, diff_inputs, n_out):
    jacobians = []
    sizes_ok = True
    types_ok = True
    for k, inp in enumerate(diff_inputs):
        n_in = _numel(inp)
        jac = np.zeros((n_in, n_out), dtype=_np_dtype(inp.dtype))
        for j, g in enumerate(rows[k] if k < len(rows) else []):
            if g is None:
                continue
            if _shape(g) != _shape(inp):
                sizes_ok = False
            elif g.dtype != inp.dtype:
                types_ok = False
            g_np = _to_numpy(g).reshape(-1)
            if g_np.size != n_in:
                raise AssertionError(
                    f"Expected out_jacobian column to have {g_np.size} elements, "
                    f"but got {n_in}"
                )
            jac[:, j] = g_np
        jacobians.append(jac)
    return jacobians, sizes_ok, types_ok


def _check_jacobians_equal(j1, j2, atol):
    for a, b in zip(j1, j2):
        if a.size != 0 and np.max(np.abs(a - b)) > atol:
            return False
    return True


def _check_analytical_jacobian_attributes(tupled_inputs, output, nondet_tol, check_grad_dtypes):
    lib = _lib()
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(tupled_inputs)]

    def vjp_fn(grad_output):
        return lib.autograd.grad(
            output, diff_inputs, grad_output, retain_graph=True, allow_unused=True
        )

    n_out = _numel(output)
    # Computed twice to check for nondeterminism ("reentrancy").
    jac1, sizes_ok, types_ok = _stack_and_check_tensors(
        _compute_analytical_jacobian_rows(vjp_fn, output), diff_inputs, n_out
    )
    jac2, _, _ = _stack_and_check_tensors(
        _compute_analytical_jacobian_rows(vjp_fn, output), diff_inputs, n_out
    )
    reentrant = _check_jacobians_equal(jac1, jac2, nondet_tol)

    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG
        )
    return jac1


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------


def _allclose_with_type_promotion(a, n, rtol, atol):
    dt = np.promote_types(a.dtype, n.dtype)
    return bool(np.allclose(a.astype(dt), n.astype(dt), rtol=rtol, atol=atol, equal_nan=False))


def _get_notallclose_msg(analytical, numerical, output_idx, input_idx):
    return (
        f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n"
    )


def _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                    check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func_out)
    if not outputs:
        return _check_no_differentiable_outputs(func, tupled_inputs, func_out, eps)

    numerical = _get_numerical_jacobian(func, tupled_inputs, func_out, eps)
    # numerical[k][i] -> per differentiable output: list over diff inputs
    diff_out_positions = [
        i for i, o in enumerate(func_out) if _is_tensor(o) and o.requires_grad
    ]
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(tupled_inputs)]
    for i, (pos, o) in enumerate(zip(diff_out_positions, outputs)):
        analytical = _check_analytical_jacobian_attributes(
            tupled_inputs, o, nondet_tol, check_grad_dtypes
        )
        for j, a in enumerate(analytical):
            n = numerical[j][pos]
            if not _allclose_with_type_promotion(a, n, rtol, atol):
                a_t = _as_lib_tensor(a, diff_inputs[j].dtype)
                n_t = _as_lib_tensor(n, o.dtype)
                raise GradcheckError(_get_notallclose_msg(a_t, n_t, i, j))
    return True


def _grad_is_all_zero(g):
    return bool(np.all(_to_numpy(g) == 0))


def _test_backward_mul_by_grad_output(outputs, tupled_inputs):
    lib = _lib()
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(tupled_inputs)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    if not outputs:
        return True
    grads_input = lib.autograd.grad(
        list(outputs), diff_inputs, [lib.zeros_like(o) for o in outputs], allow_unused=True
    )
    for gi, di in zip(grads_input, diff_inputs):
        if gi is None:
            continue
        if not _grad_is_all_zero(gi):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if _shape(gi) != _shape(di):
            raise GradcheckError("grad is incorrect size")
    return True


def _test_undefined_backward_mode(func, outputs, tupled_inputs):
    lib = _lib()
    diff_inputs = [tupled_inputs[i] for i in _diff_input_indices(tupled_inputs)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn_bc_breaking():
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking "
            "feature is enabled by default, but it may break existing callers "
            "of this function. If this is true for you, you can call this "
            'function with "check_undefined_grad=False" to disable the feature',
            stacklevel=4,
        )

    def check(output_to_check):
        if not output_to_check:
            return True
        grads_output = [lib.zeros_like(o) for o in output_to_check]
        try:
            grads_input = lib.autograd.grad(
                list(output_to_check), diff_inputs, grads_output, allow_unused=True
            )
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. "
                'Please look at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"'
            ) from e
        for gi in grads_input:
            if gi is not None and not _grad_is_all_zero(gi):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    'are undefined or zero. Please look at "Notes about undefined output '
                    'gradients" in "tools/autograd/derivatives.yaml"'
                )
        return True

    # All output grads "undefined" (zero) at once ...
    to_check = [_differentiable_outputs(func(*tupled_inputs))]
    # ... and, with several outputs, one fresh graph per output (PyTorch undefines
    # one output grad at a time; with zero grads this is the same check on a new graph).
    if len(to_check[0]) > 1:
        for _ in range(len(outputs)):
            to_check.append(_differentiable_outputs(func(*tupled_inputs)))
    return all(check(o) for o in to_check)


# --------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-06,
    atol=1e-05,
    rtol=0.001,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    r"""Check gradients computed via small finite differences against analytical
    gradients w.r.t. tensors in :attr:`inputs` that are floating point and have
    ``requires_grad=True`` (see ``torch.autograd.gradcheck``).

    Returns ``True`` if every (output, input) Jacobian pair satisfies
    ``allclose(analytical, numerical, rtol, atol)``; otherwise raises
    :class:`GradcheckError` (or returns ``False`` if ``raise_exception=False``).
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    for name, value in (
        ("check_batched_grad", check_batched_grad),
        ("check_batched_forward_grad", check_batched_forward_grad),
        ("check_forward_ad", check_forward_ad),
        ("fast_mode", fast_mode),
        ("masked", masked),
    ):
        if value:
            raise NotImplementedError(
                f"gradcheck: {name}=True is not implemented in ferrograd"
            )

    args = dict(
        func=func, inputs=inputs, eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_backward_ad=check_backward_ad,
    )
    if not raise_exception:
        try:
            return _gradcheck_helper(**args)
        except GradcheckError:
            return False
    return _gradcheck_helper(**args)


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, check_backward_ad):
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)

    func_out = func(*tupled_inputs)
    outputs = _differentiable_outputs(func_out)
    _check_outputs(outputs)

    _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol,
                    check_grad_dtypes, nondet_tol)

    if not check_backward_ad:
        return True
    _test_backward_mul_by_grad_output(outputs, tupled_inputs)
    if check_undefined_grad:
        _test_undefined_backward_mode(func, outputs, tupled_inputs)
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=False,
):
    r"""Check second-order gradients: gradcheck of the function computing the vector-Jacobian
    product of ``func`` with ``create_graph=True`` (see ``torch.autograd.gradgradcheck``).
    Without ``grad_outputs``, random ones in [-1, 1) that require grad are used."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    lib = _lib()
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            (lib.rand(tuple(x.shape), dtype=x.dtype if x.is_floating_point() else lib.float64)
             * 2 - 1).requires_grad_()
            for x in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_args_indices = {
        i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad
    }
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(
            x.requires_grad_() if i in diff_input_args_indices else x
            for i, x in enumerate(args[:-num_outputs])
        )
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(
            x.requires_grad_() if i in diff_grad_output_indices else x
            for i, x in enumerate(args[-num_outputs:])
        )
        diff_input_args = tuple(
            x for i, x in enumerate(input_args) if i in diff_input_args_indices
        )
        grad_inputs = lib.autograd.grad(
            outputs, diff_input_args, grad_outputs, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )
