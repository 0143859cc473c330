"""Attention functionals of ``ferrograd.nn.functional``.

``scaled_dot_product_attention`` and ``multi_head_attention_forward`` (with its helpers),
following PyTorch's ``torch/nn/functional.py`` and the math path of ATen's
``scaled_dot_product_attention``. They are compositions of existing tensor ops, apart from
the fused native kernel used for 4-d inputs without dropout.
"""

import math
import warnings

from ... import _core
from ..._core import bool as _bool, cat
from ..._factories import arange, zeros, zeros_like
from ..._functions import broadcast_shapes
from ...autograd.forward_ad import _has_tangent
from ._dropout import dropout
from ._linear import linear
from ._utils import _c10_name, _fmt, _scalar_name
from .activation import softmax

Tensor = _core.Tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
                                 scale=None, enable_gqa=False):
    r"""``softmax(Q K^T * scale + mask) V``, with dropout on the attention weights if ``dropout_p > 0``.

    A boolean ``attn_mask`` marks with ``True`` the positions that take part in attention; a
    floating mask is added to the scores. ``is_causal`` uses the upper-left aligned causal mask.
    Rows where every score is masked give zeros (as PyTorch's ``_safe_softmax``).
    """
    if not (query.dtype == key.dtype and query.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_c10_name(query.dtype)} key.dtype: {_c10_name(key.dtype)} and value.dtype: "
            f"{_c10_name(value.dtype)} instead."
        )
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead."
        )
    if attn_mask is not None:
        mask_dtype = str(attn_mask.dtype)
        if mask_dtype not in ("torch.bool", "torch.float32") and attn_mask.dtype != query.dtype:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {_c10_name(attn_mask.dtype)} and  query.dtype: "
                f"{_c10_name(query.dtype)} instead."
            )
        if attn_mask.dtype == _bool:
            attn_mask = zeros_like(attn_mask, dtype=query.dtype).masked_fill_(attn_mask.logical_not(), float("-inf"))
    if not query.is_floating_point():
        raise RuntimeError(f"expected scalar type Float but found {_scalar_name(query.dtype)}")

    L, S = query.size(-2), key.size(-2)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if (dropout_p == 0.0 and query.dim() == 4 and key.dim() == 4 and value.dim() == 4
            and query.shape[:2] == key.shape[:2] == value.shape[:2]
            and query.shape[-1] == key.shape[-1] and key.shape[-2] == value.shape[-2]
            and (attn_mask is None or not (attn_mask.requires_grad or _has_tangent(attn_mask)))):
        # PyTorch's fused CPU kernel (ScaledDotProductFlashAttentionForCpuBackward0)
        if attn_mask is not None:
            _check_mask_broadcasts(tuple(query.shape[:-1]) + (S,), attn_mask)
        return _core._sdpa(query, key, value, attn_mask, bool(is_causal), float(scale_factor))
    if enable_gqa:
        key, value = _repeat_kv_heads(query, key, value)
    attn = (query * scale_factor).matmul(key.transpose(-2, -1))
    if is_causal:
        allowed = arange(L).unsqueeze(-1) >= arange(S)
        attn = attn.masked_fill(allowed.logical_not(), float("-inf"))
    elif attn_mask is not None:
        # ATen adds the mask in place: it must broadcast to the scores' shape
        masked = attn + attn_mask
        if masked.shape != attn.shape:
            raise RuntimeError(
                f"output with shape {_fmt(attn.shape)} doesn't match the broadcast shape {_fmt(masked.shape)}"
            )
        attn = masked
        # _safe_softmax: a row with every position masked gives zeros instead of NaN
        blocked = (attn == float("-inf")).all(dim=-1, keepdim=True)
        attn = attn.masked_fill(blocked, 0.0).softmax(-1).masked_fill(blocked, 0.0)
    if attn_mask is None:
        attn = attn.softmax(-1)
    if dropout_p > 0.0:
        if dropout_p > 1.0:
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
        attn = dropout(attn, dropout_p, training=True)
    return attn.matmul(value)


def _check_mask_broadcasts(scores_shape, attn_mask):
    """ATen adds the mask to the scores in place: it must broadcast to their shape."""
    try:
        shape = tuple(broadcast_shapes(scores_shape, tuple(attn_mask.shape)))
    except RuntimeError:
        zeros(scores_shape, dtype=attn_mask.dtype) + attn_mask  # raises the add's own error
        raise
    if shape != scores_shape:
        raise RuntimeError(
            f"output with shape {_fmt(scores_shape)} doesn't match the broadcast shape {_fmt(shape)}"
        )


def _repeat_kv_heads(query, key, value):
    """Grouped-query attention: repeat each key/value head to match the query heads."""
    q_heads, k_heads, v_heads = query.size(-3), key.size(-3), value.size(-3)
    all_equal = q_heads == k_heads and k_heads == v_heads
    divisible = q_heads % k_heads == 0 and q_heads % v_heads == 0
    if not (all_equal or divisible):
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")

    def repeat_interleave(x, repeats):
        if repeats == 1:
            return x
        shape = tuple(x.shape)
        expanded = x.unsqueeze(-3).expand(shape[:-2] + (repeats,) + shape[-2:])
        return expanded.reshape(shape[:-3] + (shape[-3] * repeats,) + shape[-2:])

    return repeat_interleave(key, q_heads // k_heads), repeat_interleave(value, q_heads // v_heads)


# -------------------------------------------------- multi_head_attention_forward


def _in_projection_packed(q, k, v, w, b=None):
    r"""In-projection of query, key and value with the packed weight ``w`` (``3E x E``)."""
    E = q.size(-1)
    if k is v:
        if q is k:
            # self-attention
            proj = linear(q, w, b)
            proj = proj.reshape(tuple(proj.shape[:-1]) + (3, E))
            proj = proj.unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        else:
            # encoder-decoder attention
            w_q, w_kv = w.split([E, E * 2])
            if b is None:
                b_q = b_kv = None
            else:
                b_q, b_kv = b.split([E, E * 2])
            q_proj = linear(q, w_q, b_q)
            kv_proj = linear(k, w_kv, b_kv)
            kv_proj = kv_proj.reshape(tuple(kv_proj.shape[:-1]) + (2, E))
            kv_proj = kv_proj.unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return q_proj, kv_proj[0], kv_proj[1]
    else:
        w_q, w_k, w_v = w.chunk(3)
        if b is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = b.chunk(3)
        return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    r"""In-projection of query, key and value with separate weights."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    if w_q.shape != (Eq, Eq):
        raise AssertionError(f"expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}")
    if w_k.shape != (Eq, Ek):
        raise AssertionError(f"expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}")
    if w_v.shape != (Eq, Ev):
        raise AssertionError(f"expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}")
    if b_q is not None and b_q.shape != (Eq,):
        raise AssertionError(f"expecting query bias shape of {(Eq,)}, but got {b_q.shape}")
    if b_k is not None and b_k.shape != (Eq,):
        raise AssertionError(f"expecting key bias shape of {(Eq,)}, but got {b_k.shape}")
    if b_v is not None and b_v.shape != (Eq,):
        raise AssertionError(f"expecting value bias shape of {(Eq,)}, but got {b_v.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Check the shapes of the attention inputs; return whether the input is batched."""
    if query.dim() == 3:
        is_batched = True
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                f" but found {key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D"
                f" but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                f" but found {attn_mask.dim()}-D tensor instead"
            )
    elif query.dim() == 2:
        is_batched = False
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"
                f" but found {key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"
                f" but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                    f" but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected_shape = (num_heads, query.shape[0], key.shape[0])
                if attn_mask.shape != expected_shape:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected_shape} but got {attn_mask.shape}"
                    )
    else:
        raise AssertionError(
            f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor"
        )
    return is_batched


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (``True`` = masked out) becomes an additive float mask of ``target_type``."""
    if mask is not None:
        _mask_dtype = mask.dtype
        _mask_is_float = mask.is_floating_point()
        if _mask_dtype != _bool and not _mask_is_float:
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
        if check_other and other_type is not None:
            if _mask_dtype != other_type:
                warnings.warn(
                    f"Support for mismatched {mask_name} and {other_name} "
                    "is deprecated. Use same type for both instead.",
                    stacklevel=2,
                )
        if not _mask_is_float:
            mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    elif isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(
            f"Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}"
        )


def _pad_last(x):
    """``F.pad(x, (0, 1))``: one zero column appended along the last dimension."""
    return cat([x, zeros(tuple(x.shape[:-1]) + (1,), dtype=x.dtype)], dim=-1)


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    r"""Forward method of :class:`~ferrograd.nn.MultiheadAttention` (sequence-first layout)."""
    # composite until the native kernel lands
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)

    # unbatched input: pretend a batch of one and squeeze it at the end
    if not is_batched:
        query = query.unsqueeze(1)
        key = key.unsqueeze(1)
        value = value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)

    tgt_len, bsz, embed_dim = query.shape
    src_len, _, _ = key.shape

    key_padding_mask = _canonical_mask(
        mask=key_padding_mask,
        mask_name="key_padding_mask",
        other_type=_none_or_dtype(attn_mask),
        other_name="attn_mask",
        target_type=query.dtype,
    )

    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. "
            "You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )

    if is_causal and key_padding_mask is None and not need_weights:
        # the is_causal hint alone goes to scaled_dot_product_attention
        attn_mask = None
    else:
        attn_mask = _canonical_mask(
            mask=attn_mask,
            mask_name="attn_mask",
            other_type=None,
            other_name="",
            target_type=query.dtype,
            check_other=False,
        )
        if key_padding_mask is not None:
            # the merged mask is no longer causal
            is_causal = False

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        # different embedding dimensions are allowed with separate projection weights
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}"
            )
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    # in-projection
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight is None")
        if k_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but k_proj_weight is None")
        if v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but v_proj_weight is None")
        if in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    # attention mask: make it 3-D
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct_2d_size = (tgt_len, src_len)
            if attn_mask.shape != correct_2d_size:
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {correct_2d_size}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct_3d_size = (bsz * num_heads, tgt_len, src_len)
            if attn_mask.shape != correct_3d_size:
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {correct_3d_size}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # bias along the batch dimension (currently second)
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.expand(1, bsz, bias_k.size(-1))])
        v = cat([v, bias_v.expand(1, bsz, bias_v.size(-1))])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    else:
        if bias_k is not None:
            raise AssertionError("bias_k is set but bias_v is None")
        if bias_v is not None:
            raise AssertionError("bias_v is set but bias_k is None")

    # heads into the batch dimension, batch first
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}")
        if static_k.size(2) != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}")
        k = static_k
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}")
        if static_v.size(2) != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}")
        v = static_v

    # zero attention along the batch dimension (now first)
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero_attn_shape, dtype=k.dtype)], dim=1)
        v = cat([v, zeros(zero_attn_shape, dtype=v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)

    src_len = k.size(1)

    # merge key padding and attention masks
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = (
            key_padding_mask.view(bsz, 1, 1, src_len)
            .expand(-1, num_heads, -1, -1)
            .reshape(bsz * num_heads, 1, src_len)
        )
        if attn_mask is None:
            attn_mask = key_padding_mask
        else:
            attn_mask = attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        attn_output_weights = q_scaled.bmm(k.transpose(-2, -1))
        if attn_mask is not None:
            attn_output_weights = attn_output_weights + attn_mask
        attn_output_weights = softmax(attn_output_weights, dim=-1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, p=dropout_p)
        attn_output = attn_output_weights.bmm(v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))

        # optionally average the attention weights over the heads
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)

        if not is_batched:
            attn_output = attn_output.squeeze(1)
            attn_output_weights = attn_output_weights.squeeze(0)
        return attn_output, attn_output_weights
    else:
        # attn_mask is (1, L, S) or (N * num_heads, L or 1, S): make it 4-D for SDPA
        if attn_mask is not None:
            if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)

        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)

        attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)

        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        if not is_batched:
            attn_output = attn_output.squeeze(1)
        return attn_output, None
