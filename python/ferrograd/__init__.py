"""ferrograd: PyTorch's autograd API on a small, fast Rust core.

``import ferrograd as torch`` runs scripts written against PyTorch's tensor and autograd API.

Where things live: ``Tensor`` is the native class (``_core``) with its Python methods from
``_tensor.py``; the factories (``tensor``, ``zeros``, ``randn``, ...) are in ``_factories.py``;
the other torch functions (``exp``, ``add``, ``sort``, ...) in ``_functions.py``; dtypes and
the default dtype in ``_dtype.py``.
"""

from . import _core
from ._activations import (
    celu,
    celu_,
    hardshrink,
    prelu,
    rrelu,
    rrelu_,
    selu,
    selu_,
    threshold,
    threshold_,
)
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
from ._core import (  # the unary and binary ops of the core's op table (and in-place forms)
    abs,  # noqa: A004
    abs_,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    ceil_,
    cos,
    cos_,
    eq,
    erf,
    erf_,
    exp,
    exp_,
    fix,
    fix_,
    floor,
    floor_,
    floor_divide,
    frac,
    frac_,
    ge,
    gt,
    le,
    log,
    log1p,
    log1p_,
    log_,
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
    neg_,
    pow,  # noqa: A004
    reciprocal,
    reciprocal_,
    relu,
    relu_,
    remainder,
    rsqrt,
    rsqrt_,
    sgn,
    sigmoid,
    sigmoid_,
    sign,
    sin,
    sin_,
    sqrt,
    sqrt_,
    tanh,
    tanh_,
    trunc,
    trunc_,
)
from ._functions import (  # torch's names, some of them Python builtins' too
    _weight_norm,
    add,
    addcdiv,
    addcmul,
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
    lerp,
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
    norm_except_dim,
    numel,
    outer,
    permute,
    prod,
    reshape,
    roll,
    round,  # noqa: A004
    round_,
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
from ._index_functions import (
    argwhere,
    index_fill,
    index_put,
    masked_scatter,
    masked_select,
    nonzero,
    scatter_reduce,
    take,
    take_along_dim,
)
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._reduction_functions import (
    aminmax,
    cummax,
    cummin,
    cumprod,
    kthvalue,
    logcumsumexp,
    median,
    mode,
    nanmean,
    nanmedian,
    nanquantile,
    nansum,
    quantile,
    std_mean,
    var_mean,
)
from ._sampling import bernoulli, multinomial, normal, poisson
from ._set_functions import (
    bincount,
    bucketize,
    histc,
    searchsorted,
    unique,
    unique_consecutive,
)
from ._shape_functions import (
    cdist,
    diag,
    diag_embed,
    diagonal,
    einsum,
    kron,
    moveaxis,
    movedim,
    swapdims,
    tensordot,
    trace,
    tril_indices,
    triu_indices,
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
    func,
    nn,
    onnx,
    optim,
    serialization,
    testing,
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
    # memory formats
    "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
    # factories
    "tensor", "as_tensor", "from_numpy", "full", "zeros", "ones", "empty", "zeros_like",
    "ones_like", "empty_like", "full_like", "arange", "linspace", "eye",
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
    # random sampling
    "bernoulli", "multinomial", "normal", "poisson",
    # functions
    "abs", "add", "addcdiv", "addcmul", "addmm", "all", "allclose", "amax", "amin", "any", "argmax",
    "argmin", "argsort", "count_nonzero", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "bmm", "broadcast_shapes", "broadcast_tensors",
    "cat", "chunk", "clamp",
    "clip", "clone", "compile", "concat", "concatenate", "constant_pad_nd", "cos", "cumsum",
    "detach", "div", "divide", "dot", "eq", "equal", "erf", "exp", "flatten", "flip",
    "floor_divide", "gather", "ge", "gt", "index_add", "index_select", "is_complex",
    "is_floating_point", "is_tensor", "isclose", "isfinite", "isinf", "isnan", "le", "lerp", "log",
    "log1p", "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logsumexp", "lt", "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum",
    "mm", "mul", "multiply", "mv", "narrow", "ne", "neg", "negative", "norm", "norm_except_dim", "numel", "outer",
    "permute", "pow", "prod", "reciprocal", "relu", "remainder", "reshape", "roll", "rsqrt",
    "scatter", "scatter_add", "select", "sigmoid", "sign", "sin", "softmax", "sort", "split",
    "sqrt", "square", "squeeze", "stack", "std", "sub", "subtract", "sum", "swapaxes", "t",
    "tanh", "tile", "topk", "transpose", "tril", "triu", "true_divide", "unbind", "unflatten",
    "unsqueeze", "var", "where",
    "bitwise_left_shift", "bitwise_right_shift", "ceil", "fix", "floor", "frac", "round", "sgn",
    "trunc",
    # activations
    "celu", "celu_", "hardshrink", "prelu", "rrelu", "rrelu_", "selu", "selu_", "threshold",
    "threshold_",
    # in-place forms of the unary ops
    "abs_", "ceil_", "cos_", "erf_", "exp_", "fix_", "floor_", "frac_", "log_", "log1p_", "neg_",
    "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sqrt_", "tanh_", "trunc_",
    # dims moved, diagonals, contractions
    "cdist", "diag", "diag_embed", "diagonal", "einsum", "kron", "moveaxis", "movedim", "swapdims",
    "tensordot", "trace", "tril_indices", "triu_indices",
    # reductions and scans
    "aminmax", "cummax", "cummin", "cumprod", "kthvalue", "logcumsumexp", "median", "mode", "nanmean",
    "nanmedian", "nanquantile", "nansum", "quantile", "std_mean", "var_mean",
    # sets, counts and bins
    "bincount", "bucketize", "histc", "searchsorted", "unique", "unique_consecutive",
    # indexing
    "argwhere", "index_fill", "index_put", "masked_scatter", "masked_select", "nonzero", "scatter_reduce",
    "take", "take_along_dim",
    # seeds and threads
    "manual_seed", "seed", "initial_seed", "set_num_threads", "get_num_threads",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    # printing, saving
    "set_printoptions", "save", "load",
    # submodules
    "accelerator", "amp", "autograd", "backends", "cpu", "cuda", "distributed", "func", "nn", "onnx",
    "optim", "serialization", "testing", "utils",
]
