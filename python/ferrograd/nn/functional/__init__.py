"""``ferrograd.nn.functional``: the functional counterparts of the ``nn`` modules.

One module per family. A family imports ``_utils``, ``ferrograd`` core pieces and, in one
direction only, other families (``conv`` imports ``padding``; ``attention`` imports
``activation``, ``_linear`` and ``_dropout``); no family imports this package. ``linear`` and
``dropout`` live in ``_linear.py`` and ``_dropout.py``: no module is named like a function of
the package (``F.linear`` would otherwise hide its module).

Besides ``__all__``, the package holds ``Tensor`` (as ``torch.nn.functional`` does) and the
private helpers that ``nn.MultiheadAttention`` and the transformer layers call as
``F._canonical_mask``, ``F._none_or_dtype``, ...
"""

from ..._core import Tensor
from ._dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._linear import linear
from .activation import (
    _get_softmax_dim,
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
)
from .attention import (
    _canonical_mask,
    _in_projection,
    _in_projection_packed,
    _mha_shape_check,
    _none_or_dtype,
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold
from .distance import cosine_similarity, pairwise_distance, triplet_margin_loss
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, normalize
from .padding import pad
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from .sparse import embedding, one_hot
from .vision import (
    affine_grid,
    grid_sample,
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

__all__ = [
    # activation
    "relu",
    "relu_",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "leaky_relu",
    "leaky_relu_",
    "softmax",
    "log_softmax",
    "softmin",
    "elu",
    "elu_",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "softplus",
    "hardtanh",
    "hardtanh_",
    "relu6",
    "hardswish",
    "hardsigmoid",
    "mish",
    "softsign",
    "logsigmoid",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "threshold",
    "threshold_",
    "prelu",
    "glu",
    "rrelu",
    "rrelu_",
    "gumbel_softmax",
    # linear, dropout
    "linear",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    # conv
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "unfold",
    "fold",
    # pooling
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    # normalization
    "batch_norm",
    "instance_norm",
    "group_norm",
    "layer_norm",
    "normalize",
    # padding
    "pad",
    # sparse
    "embedding",
    "one_hot",
    # attention
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    # loss
    "l1_loss",
    "mse_loss",
    "smooth_l1_loss",
    "huber_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "triplet_margin_loss",
    # distance
    "cosine_similarity",
    "pairwise_distance",
    # vision
    "pixel_shuffle",
    "pixel_unshuffle",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "affine_grid",
    "grid_sample",
]
