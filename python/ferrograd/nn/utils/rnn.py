"""Packed and padded sequences for the recurrent layers (a port of ``torch/nn/utils/rnn.py``).

A ``PackedSequence`` holds a batch of variable-length sequences, sorted by decreasing length,
time step by time step: ``data`` stacks the ``batch_sizes[t]`` elements of step ``t`` for each
``t``. PyTorch packs and pads with native kernels; here they are slices, ``cat`` and ``stack``,
so packing and padding are recorded by autograd like any other op.
"""

from collections import namedtuple
from collections.abc import Iterable

from ..._core import Tensor, cat, stack
from ..._dtype import float32, float64, int64
from ..._factories import arange, as_tensor, full, tensor
from ..._functions import sort

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _bind(optional, fn):
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    r"""The data and the list of ``batch_sizes`` of a packed sequence.

    Made by :func:`pack_padded_sequence` or :func:`pack_sequence` (not by hand). ``data`` is
    ``(sum(batch_sizes), *)``; ``batch_sizes[t]`` is the number of sequences longer than
    ``t``; ``sorted_indices`` (when the batch was sorted by length here) is the permutation
    from the given batch order to the sorted one, ``unsorted_indices`` its inverse.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices, unsorted_indices))

    def pin_memory(self):
        return self

    def to(self, *args, **kwargs):
        r"""``self.data.to(*args, **kwargs)``; the indices follow ``data``'s device and
        ``batch_sizes`` stays as it is. Returns ``self`` when ``data`` is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cuda(self, *args, **kwargs):
        raise RuntimeError("Torch not compiled with CUDA enabled")

    def cpu(self, *args, **kwargs):
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=float64)

    def float(self):
        return self.to(dtype=float32)

    def long(self):
        return self.to(dtype=int64)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    # PackedSequence(data, batch_sizes, sorted_indices)
    if batch_sizes is not None:
        return data, batch_sizes, sorted_indices, unsorted_indices
    # PackedSequence((data, batch_sizes), *, sorted_indices)
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of ``permutation`` (a 1-d int64 tensor), or None for None."""
    if permutation is None:
        return None
    return permutation.argsort()


def _check_lengths_tensor(lengths, name):
    if lengths.dim() != 1 or lengths.dtype != int64:
        kind = {"torch.int64": "Long", "torch.float32": "Float", "torch.float64": "Double",
                "torch.bool": "Bool"}[str(lengths.dtype)]
        raise RuntimeError(
            f"'{name}' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D cpu {kind} tensor"
        )


def _pack(input, lengths, batch_first):
    """PyTorch's ``_pack_padded_sequence``: (data, batch_sizes) of a padded ``(T, B, *)`` input."""
    _check_lengths_tensor(lengths, "lengths")
    if batch_first:
        input = input.transpose(0, 1)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    batch_size = input.size(1)
    lengths = lengths.tolist()
    if len(lengths) != batch_size:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} (batch_size={batch_size})"
        )
    if lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if any(lengths[i + 1] > lengths[i] for i in range(batch_size - 1)):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
            "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
            "requirement if you do not need ONNX exportability."
        )
    steps, batch_sizes = [], []
    trailing = tuple(input.shape[2:])
    prev_l = 0
    for i in range(batch_size):
        length = lengths[batch_size - 1 - i]
        if length > prev_l:
            current_batch_size = batch_size - i
            steps.append(input[prev_l:length, :current_batch_size].reshape((-1,) + trailing))
            batch_sizes += [current_batch_size] * (length - prev_l)
            prev_l = length
    return cat(steps), tensor(batch_sizes, dtype=int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    r"""Packs a padded batch of variable-length sequences.

    ``input`` is ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``); ``lengths`` (a list or a
    1-d tensor) holds each sequence's length. With ``enforce_sorted`` the lengths must be in
    decreasing order; otherwise the batch is sorted here and the permutation is kept in the
    result.
    """
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=int64)
    else:
        lengths = lengths.to(dtype=int64)

    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = sort(lengths, descending=True)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)

    data, batch_sizes = _pack(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    r"""Pads a packed batch of variable-length sequences: the inverse of
    :func:`pack_padded_sequence`.

    Returns ``(padded, lengths)``: ``padded`` is ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first``), ``T`` the longest length or ``total_length``; ``lengths`` is an int64
    tensor, in the batch order of the sequences before packing.
    """
    batch_sizes = sequence.batch_sizes
    _check_lengths_tensor(batch_sizes, "batch_sizes")
    max_seq_length = batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length "
                "of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {max_seq_length}"
            )
        max_seq_length = total_length
    sizes = batch_sizes.tolist()
    data = sequence.data
    max_batch_size = sizes[0]
    trailing = tuple(data.shape[1:])
    steps = []
    for step in data.split(sizes):
        missing = max_batch_size - step.size(0)
        if missing:
            step = cat([step, full((missing,) + trailing, padding_value, dtype=data.dtype)])
        steps.append(step)
    padded = stack(steps)
    if max_seq_length > len(sizes):
        padding = full((max_seq_length - len(sizes), max_batch_size) + trailing, padding_value, dtype=data.dtype)
        padded = cat([padded, padding])
    lengths = tensor([sum(1 for s in sizes if s > b) for b in range(max_batch_size)], dtype=int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    r"""Pads a list of variable-length tensors (each ``(L_i, *)``) with ``padding_value``.

    Returns ``(max L_i, B, *)``, or ``(B, max L_i, *)`` with ``batch_first``; the padding goes
    after each sequence (``padding_side="right"``) or before it (``"left"``).
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: " f"{type(sequences)}"
        )
    sequences = tuple(sequences)
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    trailing = tuple(first.shape[1:])
    dtype = first.dtype
    max_len = max(seq.size(0) for seq in sequences)
    padded = []
    for seq in sequences:
        seq_trailing = tuple(seq.shape[1:])
        if seq_trailing != trailing:
            for j in range(max(len(trailing), len(seq_trailing))):
                a = trailing[-1 - j] if j < len(trailing) else 1
                b = seq_trailing[-1 - j] if j < len(seq_trailing) else 1
                if a != b:
                    raise RuntimeError(
                        f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                        f"dimension {len(trailing) - j}"
                    )
        if seq.dtype != dtype:
            seq = seq.to(dtype)
        missing = max_len - seq.size(0)
        if missing:
            padding = full((missing,) + trailing, padding_value, dtype=dtype)
            seq = cat([seq, padding] if padding_side == "right" else [padding, seq])
        padded.append(seq)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    r"""Splits a padded batch back into a list of variable-length tensors (the inverse of
    :func:`pad_sequence`). Unlike PyTorch's, it does not transpose ``padded_sequences`` in
    place."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    max_length = padded_sequences.shape[1]
    idx = arange(max_length)
    unpadded_sequences = []
    for seq, length in zip(padded_sequences, lengths):
        mask = idx < length
        unpadded_sequences.append(seq[mask])
    return unpadded_sequences


def pack_sequence(sequences, enforce_sorted=True):
    r"""Packs a list of variable-length tensors (each ``(L_i, *)``); with ``enforce_sorted``
    they must come in decreasing length."""
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    r"""The list of variable-length tensors of a packed sequence (the inverse of
    :func:`pack_sequence`)."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
