"""ferrograd: PyTorch's autograd API on a small, fast Rust core.

``import ferrograd as torch`` runs scripts written against PyTorch's tensor and autograd API.

Where things live: ``Tensor`` is the native class (``_core``) with its Python methods from
``_tensor.py``; the factories (``tensor``, ``zeros``, ``randn``, ...) are in ``_factories.py``;
the other torch functions (``exp``, ``add``, ``sort``, ...) in ``_functions.py``; dtypes and
the default dtype in ``_dtype.py``.
"""

from . import _core
from ._core import (
    Generator,
    OutOfMemoryError,
    Tensor,
    cat,
    default_generator,
    get_num_threads,
    initial_seed,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    set_num_threads,
    stack,
    where,
)
from ._device import device
from ._dtype import (
    bfloat16,
    bool,  # noqa: A004  (torch's dtype, as torch.bool)
    can_cast,
    double,
    dtype,
    finfo,
    float,  # noqa: A004  (torch's dtype, as torch.float)
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    int,  # noqa: A004  (torch's dtype, as torch.int)
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    short,
    uint8,
)
from ._factories import (
    _rebuild_tensor,  # unpickles tensors: pickles name it ferrograd._rebuild_tensor
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)

# isort: split
from ._core import (  # the unary and binary ops of the core's op table
    abs,  # noqa: A004
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cos,
    eq,
    erf,
    exp,
    floor_divide,
    ge,
    gt,
    le,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,  # noqa: A004
    reciprocal,
    relu,
    remainder,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    tanh,
)
from ._functions import (  # torch's names, some of them Python builtins' too
    add,
    addmm,
    all,  # noqa: A004
    allclose,
    amax,
    amin,
    any,  # noqa: A004
    argmax,
    argmin,
    argsort,
    bmm,
    broadcast_shapes,
    broadcast_tensors,
    chunk,
    clamp,
    clip,
    clone,
    compile,  # noqa: A004
    constant_pad_nd,
    count_nonzero,
    cumsum,
    detach,
    div,
    divide,
    dot,
    equal,
    flatten,
    flip,
    gather,
    index_add,
    index_select,
    is_complex,
    is_floating_point,
    is_tensor,
    isclose,
    isfinite,
    isinf,
    isnan,
    log_softmax,
    logsumexp,
    manual_seed,
    masked_fill,
    matmul,
    max,
    mean,
    min,
    mm,
    multiply,
    mv,
    narrow,
    negative,
    norm,
    numel,
    outer,
    permute,
    prod,
    reshape,
    roll,
    scatter,
    scatter_add,
    seed,
    select,
    softmax,
    sort,
    split,
    square,
    squeeze,
    std,
    sub,
    subtract,
    sum,  # noqa: A004
    swapaxes,
    t,
    tile,
    topk,
    transpose,
    tril,
    triu,
    true_divide,
    unbind,
    unflatten,
    unsqueeze,
    var,
)
from ._size import Size
from ._tensor import install as _install
from ._tensor_str import set_printoptions
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.anomaly_mode import set_anomaly_enabled

_install()  # Tensor's Python methods onto the native class

from . import (  # noqa: E402
    accelerator,
    amp,
    autograd,
    backends,
    cpu,
    cuda,
    distributed,
    nn,
    onnx,
    optim,
    serialization,
    utils,
)
from .amp import (  # noqa: E402
    autocast,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
)
from .serialization import load, save  # noqa: E402

concat = cat
concatenate = cat

__version__ = "0.1.0"

__all__ = [
    # tensors, sizes, devices, generators
    "Tensor", "Size", "device", "Generator", "default_generator", "OutOfMemoryError",
    # dtypes
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "float", "double", "half", "long", "int", "short", "get_default_dtype",
    "set_default_dtype", "promote_types", "result_type", "can_cast", "iinfo", "finfo",
    # mixed precision
    "autocast", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_cpu_enabled",
    "get_autocast_cpu_dtype", "is_autocast_available",
    # factories
    "tensor", "as_tensor", "from_numpy", "full", "zeros", "ones", "empty", "zeros_like",
    "ones_like", "empty_like", "full_like", "arange", "linspace", "eye",
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
    # functions
    "abs", "add", "all", "allclose", "amax", "amin", "any", "argmax", "argmin", "argsort",
    "addmm", "count_nonzero", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm",
    "broadcast_shapes", "broadcast_tensors",
    "cat", "chunk", "clamp",
    "clip", "clone", "compile", "concat", "concatenate", "constant_pad_nd", "cos", "cumsum",
    "detach", "div", "divide", "dot", "eq", "equal", "erf", "exp", "flatten", "flip",
    "floor_divide", "gather", "ge", "gt", "index_add", "index_select", "is_complex",
    "is_floating_point", "is_tensor", "isclose", "isfinite", "isinf", "isnan", "le", "log",
    "log1p", "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logsumexp", "lt", "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum",
    "mm", "mul", "multiply", "mv", "narrow", "ne", "neg", "negative", "norm", "numel", "outer",
    "permute", "pow", "prod", "reciprocal", "relu", "remainder", "reshape", "roll", "rsqrt",
    "scatter", "scatter_add", "select", "sigmoid", "sign", "sin", "softmax", "sort", "split",
    "sqrt", "square", "squeeze", "stack", "std", "sub", "subtract", "sum", "swapaxes", "t",
    "tanh", "tile", "topk", "transpose", "tril", "triu", "true_divide", "unbind", "unflatten",
    "unsqueeze", "var", "where",
    # seeds and threads
    "manual_seed", "seed", "initial_seed", "set_num_threads", "get_num_threads",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    # printing, saving
    "set_printoptions", "save", "load",
    # submodules
    "accelerator", "amp", "autograd", "backends", "cpu", "cuda", "distributed", "nn", "onnx", "optim",
    "serialization", "utils",
]
