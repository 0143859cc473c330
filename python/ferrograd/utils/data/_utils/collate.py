"""Collation of samples into batches: ``default_collate`` and ``default_convert``.

As in ``torch.utils.data._utils.collate``; the functions live at module level so
that worker processes can pickle them.
"""

import collections
import copy
import re
from collections.abc import Callable

import numpy as np

from ...._core import Tensor, stack
from ...._dtype import float64
from ...._factories import as_tensor, tensor

np_str_obj_array_pattern = re.compile(r"[SaUO]")


def default_convert(data):
    r"""Convert each numpy array (or numpy scalar) inside ``data`` to a tensor.

    Used when automatic batching is disabled (``batch_size=None``); other values are
    returned unchanged, tuples come back as lists.
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    elif (
        elem_type.__module__ == "numpy"
        and elem_type.__name__ != "str_"
        and elem_type.__name__ != "string_"
    ):
        # arrays of strings and objects are left alone
        if (
            elem_type.__name__ == "ndarray"
            and np_str_obj_array_pattern.search(data.dtype.str) is not None
        ):
            return data
        return as_tensor(data)
    elif isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # clone, so that a mapping type with extra state keeps it
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            else:
                return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    elif isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    elif isinstance(data, tuple):
        return [default_convert(d) for d in data]  # backwards compatibility
    elif isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            else:
                return elem_type([default_convert(d) for d in data])
        except TypeError:
            # e.g. range: no copy()/__setitem__ or no __init__(iterable)
            return [default_convert(d) for d in data]
    else:
        return data


default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)


def collate(batch, *, collate_fn_map=None):
    r"""Collate a batch, dispatching element types through ``collate_fn_map``.

    ``collate_fn_map`` maps a type (or tuple of types) to a function
    ``fn(batch, *, collate_fn_map)``; an exact type match wins, otherwise the first
    key the element is an instance of.  Mappings, namedtuples and sequences are
    collated field by field.
    """
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)

        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(
                    {
                        key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                        for key in elem
                    }
                )
                return clone
            else:
                return elem_type(
                    {
                        key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                        for key in elem
                    }
                )
        except TypeError:
            return {
                key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                for key in elem
            }
    elif isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(
            *(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch))
        )
    elif isinstance(elem, collections.abc.Sequence):
        # every element of the batch must have the same length
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(elem) == elem_size for elem in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))  # may be read twice

        if isinstance(elem, tuple):
            # backwards compatibility: tuples come back as lists
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        else:
            try:
                if isinstance(elem, collections.abc.MutableSequence):
                    clone = copy.copy(elem)
                    for i, samples in enumerate(transposed):
                        clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                    return clone
                else:
                    return elem_type(
                        [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
                    )
            except TypeError:
                return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    # arrays of strings and objects
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    # through an array, so that the scalars' own dtype (e.g. float64) is kept
    return as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {Tensor: collate_tensor_fn}
# ndarray covers np.memmap too; string scalars are left out of the scalar types
default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    r"""Put each data field of the samples into a tensor with an outer batch dimension.

    * tensor -> stacked tensor;  numpy array -> tensor;  numpy scalar -> tensor
    * ``float`` -> float64 tensor;  ``int`` -> int64 tensor (``bool`` -> bool tensor)
    * ``str`` / ``bytes`` -> unchanged (the batch itself)
    * ``Mapping[K, V_i]`` -> ``Mapping[K, default_collate([V_1, V_2, ...])]``
    * namedtuple -> the namedtuple of collated fields
    * ``Sequence[V1_i, V2_i, ...]`` -> ``[default_collate([V1_1, V1_2, ...]), ...]``
      (a list for tuples, the sequence's own type otherwise)

    Example:
        >>> default_collate([(0, 1), (2, 3)])
        [tensor([0, 2]), tensor([1, 3])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
