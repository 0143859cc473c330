"""``ferrograd.func`` (PyTorch's ``torch.func``): composable function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``jvp``, ``jacfwd``, ``hessian`` and
``linearize`` are built on ``autograd.grad`` (forward-mode products with the double-vjp trick,
see ``_eager_transforms``); ``vmap`` is a Python loop over the batch (``_vmap``);
``functional_call`` and ``stack_module_state`` swap a module's parameters and buffers for the
call (``_functional_call``).
"""

from ._eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._functional_call import functional_call, stack_module_state
from ._vmap import vmap

__all__ = [
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "linearize",
    "vmap",
    "functional_call",
    "stack_module_state",
]
