"""``linear`` of ``ferrograd.nn.functional``."""

from ... import _core

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """``y = x A^T + b`` (one fused addmm for a batch of vectors)."""
    return _core.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    r"""``y = x1^T A x2 + b`` for ``weight`` ``A`` of shape ``(out, in1, in2)``, over the leading
    (batch) dimensions the two inputs share."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {i}: got {input1.shape[i]} and "
                f"{input2.shape[i]}"
            )
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected "
            f"{weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected "
            f"{weight.shape[2]}"
        )
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected {weight.shape[0]}"
        )
    out_features, in1, in2 = weight.shape
    # (x1 A_o) for every output o in one matmul, then the dot with x2
    left = input1.matmul(weight.transpose(0, 1).reshape(in1, out_features * in2))
    out = (left.unflatten(-1, (out_features, in2)) * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias
