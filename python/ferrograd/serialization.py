"""``ferrograd.save`` / ``ferrograd.load`` in the safetensors format.

A file is a plain safetensors file written and read by the ``safetensors`` package
(its numpy flavour).  Nothing is ever pickled or unpickled, so loading a file cannot
run code from it.

* A flat ``{str: tensor}`` dict (a ``state_dict()``) stores each tensor under its own
  key, so ``safetensors.torch.load_file`` reads the file in PyTorch; a file written
  by ``safetensors.torch.save_file`` loads here as a dict of tensors.
* Anything else (a tensor, an optimizer ``state_dict()``, nested dicts / lists /
  tuples of tensors, ints, floats, bools, None and strings) stores its tensors under
  generated keys ``"0"``, ``"1"``, ...

In both cases the structure goes into the file's metadata as JSON (key
``"ferrograd"``), so that loading restores it exactly: dict vs OrderedDict and key
order, int / tuple dict keys, tuple vs list, ``requires_grad`` and ``nn.Parameter``.
Each tensor is stored as a contiguous copy of the values it shows (views and
non-contiguous tensors included); storage sharing is not kept: a tensor that
appears twice, or two views of one storage, are written as two copies and load as
two independent tensors (the safetensors format has no aliasing).
"""

import collections
import json
import os
import struct

_META_KEY = "ferrograd"
_VERSION = 1

# safetensors dtype names of the dtypes ferrograd has
_SAFETENSORS_DTYPES = {"F32", "F64", "I64", "BOOL"}

_PICKLE_HINT = (
    "ferrograd reads safetensors files only and never unpickles a file (unpickling can run "
    "arbitrary code). To convert a checkpoint made by torch.save, in PyTorch run: "
    "safetensors.torch.save_file(torch.load(path), 'model.safetensors')"
)


def _tensor_types():
    from . import Tensor
    from .nn.parameter import Buffer, Parameter

    return Tensor, Parameter, Buffer


class _Encoder:
    r"""Turns an object into a JSON-able structure plus a dict of numpy arrays.

    Python scalars, strings and None stay as JSON values; every container and every
    tensor becomes a JSON object with one tag key:
    ``{"T": key}`` tensor (with ``"rg"``: requires_grad, ``"cls"``: Parameter / Buffer),
    ``{"D": [[k, v], ...]}`` dict (``"od": true`` for OrderedDict), ``{"L": [...]}``
    list, ``{"U": [...]}`` tuple.
    """

    def __init__(self):
        self.arrays = {}
        self.Tensor, self.Parameter, self.Buffer = _tensor_types()

    def tensor(self, t, key):
        if type(t) not in (self.Tensor, self.Parameter, self.Buffer):
            raise TypeError(f"ferrograd.save cannot store tensors of type {type(t).__qualname__}")
        a = t.detach().numpy()
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
        self.arrays[key] = a
        node = {"T": key}
        if t.requires_grad:
            node["rg"] = True
        if type(t) is self.Parameter:
            node["cls"] = "Parameter"
        elif type(t) is self.Buffer:
            node["cls"] = "Buffer"
            node["persistent"] = bool(getattr(t, "persistent", True))
        return node

    def encode(self, obj, key=None):
        t = type(obj)
        if obj is None or t in (bool, int, float, str):
            return obj
        if isinstance(obj, self.Tensor):
            return self.tensor(obj, str(len(self.arrays)) if key is None else key)
        if t in (dict, collections.OrderedDict):
            items = []
            for k, v in obj.items():
                if isinstance(k, self.Tensor):
                    raise TypeError("ferrograd.save cannot store a dict with tensor keys")
                items.append([self.encode(k), self.encode(v)])
            node = {"D": items}
            if t is collections.OrderedDict:
                node["od"] = True
            return node
        if t is list:
            return {"L": [self.encode(v) for v in obj]}
        if t is tuple:
            return {"U": [self.encode(v) for v in obj]}
        raise TypeError(
            f"ferrograd.save cannot store objects of type {t.__module__}.{t.__qualname__}: it saves "
            "tensors and dicts, lists and tuples of tensors, ints, floats, bools, strings and None"
        )

    def encode_top(self, obj):
        Tensor = self.Tensor
        if (
            type(obj) in (dict, collections.OrderedDict)
            and all(type(k) is str for k in obj)
            and all(isinstance(v, Tensor) for v in obj.values())
            and "__metadata__" not in obj
        ):
            # a state_dict: every tensor under its own name
            items = [[k, self.encode(v, key=k)] for k, v in obj.items()]
            node = {"D": items}
            if type(obj) is collections.OrderedDict:
                node["od"] = True
            return node
        return self.encode(obj)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    r"""Save ``obj`` to ``f`` (a path or a binary file-like object) as a safetensors file.

    ``obj`` may be a tensor, a ``state_dict()``, an optimizer ``state_dict()`` or any
    nesting of dicts, lists and tuples of tensors, ints, floats, bools, strings and
    None.  The pickle-related arguments are accepted for compatibility and ignored.
    """
    import safetensors.numpy

    enc = _Encoder()
    structure = enc.encode_top(obj)
    metadata = {
        "format": "pt",
        _META_KEY: json.dumps({"version": _VERSION, "obj": structure}, separators=(",", ":")),
    }
    data = safetensors.numpy.save(enc.arrays, metadata=metadata)
    if isinstance(f, (str, os.PathLike)):
        parent = os.path.dirname(os.fspath(f))
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def _describe(f):
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else "the given file"


def _read_header(data, f):
    r"""Parse and check the safetensors header; returns it as a dict."""
    what = _describe(f)
    if data[:4] == b"PK\x03\x04":
        raise RuntimeError(
            f"{what} is a zip archive (the format of torch.save), not a safetensors file. {_PICKLE_HINT}"
        )
    if data[:1] == b"\x80":
        raise RuntimeError(
            f"{what} is a pickle (the legacy format of torch.save), not a safetensors file. {_PICKLE_HINT}"
        )
    bad = RuntimeError(f"{what} is not a safetensors file. {_PICKLE_HINT}")
    if len(data) < 8:
        raise bad
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise bad
    try:
        header = json.loads(bytes(data[8 : 8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise bad from None
    if not isinstance(header, dict):
        raise bad
    return header


def _decode(node, tensors):
    from .nn.parameter import Buffer, Parameter

    if not isinstance(node, dict):
        if isinstance(node, list):
            raise RuntimeError("ferrograd.load: malformed structure in the file's metadata")
        return node
    if "T" in node:
        key = node["T"]
        if key not in tensors:
            raise RuntimeError(f"ferrograd.load: the file's metadata names a missing tensor {key!r}")
        t = tensors[key]
        cls = node.get("cls")
        if cls == "Parameter":
            return Parameter(t, requires_grad=bool(node.get("rg", False)))
        if cls == "Buffer":
            t = Buffer(t, persistent=node.get("persistent", True))
        if node.get("rg", False):
            t.requires_grad_(True)
        return t
    if "D" in node:
        out = collections.OrderedDict() if node.get("od") else {}
        for k, v in node["D"]:
            out[_decode(k, tensors)] = _decode(v, tensors)
        return out
    if "L" in node:
        return [_decode(v, tensors) for v in node["L"]]
    if "U" in node:
        return tuple(_decode(v, tensors) for v in node["U"])
    raise RuntimeError("ferrograd.load: malformed structure in the file's metadata")


def _check_map_location(map_location):
    from . import device

    if map_location is None or callable(map_location):
        # everything lives on the CPU; a callable (e.g. ``lambda s, loc: s``) has
        # nothing to move
        return
    if isinstance(map_location, dict):
        for v in map_location.values():
            device(v)
        return
    device(map_location)  # raises for devices other than the CPU


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    r"""Load an object saved by :func:`ferrograd.save`, or any safetensors file.

    ``f`` is a path or a binary file-like object.  A safetensors file without
    ferrograd's metadata (e.g. from ``safetensors.torch.save_file``) loads as a dict
    of tensors.  Files made by ``torch.save`` (zip/pickle) are refused with a
    RuntimeError: nothing is ever unpickled, whatever ``weights_only`` says.
    ``map_location`` may only name the CPU.
    """
    import safetensors
    import safetensors.numpy

    from . import from_numpy

    _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    else:
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"ferrograd.load: expected a binary file, but read {type(data).__name__}")
        data = bytes(data)

    header = _read_header(data, f)
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict):
        raise RuntimeError(f"{_describe(f)} is not a valid safetensors file: bad __metadata__")
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype") if isinstance(info, dict) else None
        if not isinstance(dtype, str):
            raise RuntimeError(f"{_describe(f)} is not a valid safetensors file: no dtype for {name!r}")
        if dtype not in _SAFETENSORS_DTYPES:
            raise NotImplementedError(
                f"ferrograd.load: tensor {name!r} has dtype {dtype}, which ferrograd does not "
                "support (supported: F32, F64, I64, BOOL)"
            )
    try:
        arrays = safetensors.numpy.load(data)
    except safetensors.SafetensorError as e:
        raise RuntimeError(f"{_describe(f)} is not a valid safetensors file: {e}") from None

    tensors = {name: from_numpy(a) for name, a in arrays.items()}

    if _META_KEY not in metadata:
        return tensors
    try:
        info = json.loads(metadata[_META_KEY])
        version, structure = info["version"], info["obj"]
    except (ValueError, TypeError, KeyError):
        raise RuntimeError("ferrograd.load: malformed structure in the file's metadata") from None
    if version != _VERSION:
        raise RuntimeError(
            f"ferrograd.load: the file was written by a newer ferrograd (format version {version})"
        )
    try:
        return _decode(structure, tensors)
    except (TypeError, ValueError, KeyError, AttributeError):
        raise RuntimeError("ferrograd.load: malformed structure in the file's metadata") from None

