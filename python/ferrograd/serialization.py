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
The structure is written as a flat list of tokens in depth-first order (format
version 2), so neither the JSON nor the code that writes and reads it recurses: any
nesting up to ``_MAX_DEPTH`` containers saves and loads whatever the recursion limit.
Files of format version 1 (a JSON tree) still load.
Each tensor is stored as a contiguous copy of the values it shows (views and
non-contiguous tensors included); storage sharing is not kept: a tensor that
appears twice, or two views of one storage, are written as two copies and load as
two independent tensors (the safetensors format has no aliasing).
"""

import collections
import json
import os
import struct

import numpy as np
import safetensors
import safetensors.numpy

from ._core import Tensor, bfloat16
from ._device import device
from ._factories import from_numpy
from .nn.parameter import Buffer, Parameter

_META_KEY = "ferrograd"
_VERSION = 2  # 1: the structure as a JSON tree; 2: as a flat list of tokens

# the deepest nesting of dicts, lists and tuples that save writes and load reads
_MAX_DEPTH = 1000

_LEAVE = object()  # _Encoder.encode's stack marker: the container on top is done

# safetensors dtype names of the dtypes ferrograd has
_SAFETENSORS_DTYPES = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"}


def _from_array(a, bf16_bits):
    """A loaded array as a tensor: bfloat16 bit patterns back to values (exact in float32), a
    BOOL tensor's bytes (anything, in a crafted file) as 0 / 1."""
    if bf16_bits:
        return from_numpy((a.astype(np.uint32) << 16).view(np.float32)).bfloat16()
    return from_numpy(a.view("uint8").astype(bool) if a.dtype == bool else a)


def _retag(data, dtypes):
    """``data`` (a safetensors file) with the dtype of each tensor named in ``dtypes`` replaced
    (bfloat16 travels through numpy, which has no such dtype, as its uint16 bit patterns); the
    header stays padded to 8 bytes as safetensors writes it."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    for name, dtype in dtypes.items():
        header[name]["dtype"] = dtype
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n:]

_PICKLE_HINT = (
    "ferrograd reads safetensors files only and never unpickles a file (unpickling can run "
    "arbitrary code). To convert a checkpoint made by torch.save, in PyTorch run: "
    "safetensors.torch.save_file(torch.load(path), 'model.safetensors')"
)


class _Encoder:
    r"""Turns an object into a flat list of JSON-able tokens plus a dict of numpy arrays.

    The tokens list the object depth-first: Python scalars, strings and None are
    tokens as they are; a tensor is ``{"T": key}`` (with ``"rg"``: requires_grad,
    ``"cls"``: Parameter / Buffer); a container is one token giving its length,
    followed by its elements: ``{"D": n}`` dict (``"od": true`` for OrderedDict) then
    key, value, key, value, ...; ``{"L": n}`` list; ``{"U": n}`` tuple.  An explicit
    stack instead of recursion, so the nesting depth is bounded by ``_MAX_DEPTH``
    only.
    """

    def __init__(self):
        self.arrays = {}
        self.tokens = []
        self.bf16 = []  # keys of bfloat16 tensors, stored as their uint16 bit patterns

    def tensor(self, t, key):
        if type(t) not in (Tensor, Parameter, Buffer):
            raise TypeError(f"ferrograd.save cannot store tensors of type {type(t).__qualname__}")
        if t.dtype == bfloat16:
            # bfloat16 is the upper half of a float32: its bits, as uint16
            a = (t.detach().float().numpy().view(np.uint32) >> 16).astype(np.uint16)
            self.bf16.append(key)
        else:
            a = t.detach().numpy()
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
        self.arrays[key] = a
        node = {"T": key}
        if t.requires_grad:
            node["rg"] = True
        if type(t) is Parameter:
            node["cls"] = "Parameter"
        elif type(t) is Buffer:
            node["cls"] = "Buffer"
            node["persistent"] = bool(getattr(t, "persistent", True))
        return node

    def encode(self, obj):
        tokens = self.tokens
        on_path = set()  # ids of the containers enclosing the current object
        # (object, depth of the containers enclosing it); (_LEAVE, id) closes a container
        stack = [(obj, 0)]
        while stack:
            obj, depth = stack.pop()
            if obj is _LEAVE:
                on_path.discard(depth)
                continue
            t = type(obj)
            if obj is None or t in (bool, int, float, str):
                tokens.append(obj)
                continue
            if isinstance(obj, Tensor):
                tokens.append(self.tensor(obj, str(len(self.arrays))))
                continue
            if t in (dict, collections.OrderedDict):
                node = {"D": len(obj)}
                if t is collections.OrderedDict:
                    node["od"] = True
                children = []
                for k, v in obj.items():
                    if isinstance(k, Tensor):
                        raise TypeError("ferrograd.save cannot store a dict with tensor keys")
                    children += (k, v)
            elif t is list:
                node, children = {"L": len(obj)}, obj
            elif t is tuple:
                node, children = {"U": len(obj)}, obj
            else:
                raise TypeError(
                    f"ferrograd.save cannot store objects of type {t.__module__}.{t.__qualname__}: it "
                    "saves tensors and dicts, lists and tuples of tensors, ints, floats, bools, "
                    "strings and None"
                )
            if depth >= _MAX_DEPTH:
                raise ValueError(
                    f"ferrograd.save: nesting deeper than {_MAX_DEPTH} levels of dicts, lists and "
                    "tuples is not supported"
                )
            if id(obj) in on_path:
                raise ValueError(
                    f"ferrograd.save: the {t.__name__} contains itself (a reference cycle), which "
                    "cannot be saved"
                )
            tokens.append(node)
            on_path.add(id(obj))
            stack.append((_LEAVE, id(obj)))
            stack.extend((c, depth + 1) for c in reversed(children))

    def encode_top(self, obj):
        if (
            type(obj) in (dict, collections.OrderedDict)
            and all(type(k) is str for k in obj)
            and all(isinstance(v, Tensor) for v in obj.values())
            and "__metadata__" not in obj
        ):
            # a state_dict: every tensor under its own name
            node = {"D": len(obj)}
            if type(obj) is collections.OrderedDict:
                node["od"] = True
            self.tokens.append(node)
            for k, v in obj.items():
                self.tokens += (k, self.tensor(v, k))
        else:
            self.encode(obj)
        return self.tokens


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    r"""Save ``obj`` to ``f`` (a path or a binary file-like object) as a safetensors file.

    ``obj`` may be a tensor, a ``state_dict()``, an optimizer ``state_dict()`` or any
    nesting of dicts, lists and tuples of tensors, ints, floats, bools, strings and
    None.  The pickle-related arguments are accepted for compatibility and ignored.
    """
    enc = _Encoder()
    structure = enc.encode_top(obj)
    metadata = {
        "format": "pt",
        _META_KEY: json.dumps({"version": _VERSION, "obj": structure}, separators=(",", ":")),
    }
    data = safetensors.numpy.save(enc.arrays, metadata=metadata)
    if enc.bf16:
        data = _retag(data, dict.fromkeys(enc.bf16, "BF16"))
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
    r"""Parse and check the safetensors header; returns it as a dict.

    The format is told from the whole structure, never from one byte: a safetensors
    file is an 8-byte little-endian length N > 0 then an N-byte JSON header that
    starts with ``{``.  Its first byte can be anything, 0x80 (pickle's PROTO opcode)
    included: every header length ending in 0x80 starts the file with that byte.
    """
    what = _describe(f)
    if len(data) > 8:
        (n,) = struct.unpack("<Q", data[:8])
        if 0 < n <= len(data) - 8 and data[8] == ord("{"):
            try:
                header = json.loads(bytes(data[8 : 8 + n]).decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                header = None
            if not isinstance(header, dict):
                raise RuntimeError(f"{what} is not a valid safetensors file: its header is not a JSON object")
            return header
    if data[:4] == b"PK\x03\x04":
        raise RuntimeError(
            f"{what} is a zip archive (the format of torch.save), not a safetensors file. {_PICKLE_HINT}"
        )
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise RuntimeError(
            f"{what} is a pickle (the legacy format of torch.save), not a safetensors file. {_PICKLE_HINT}"
        )
    raise RuntimeError(f"{what} is not a safetensors file. {_PICKLE_HINT}")


class _Malformed(Exception):
    pass


def _v1_tokens(node):
    r"""The tokens of a format-1 structure (a JSON tree of the same nodes)."""
    tokens = []
    stack = [node]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or "T" in node:
            tokens.append(node)  # (a list here is malformed; _decode refuses it)
            continue
        tag = next((t for t in ("D", "L", "U") if t in node), None)
        elements = node.get(tag)
        if not isinstance(elements, list):
            raise _Malformed
        tokens.append({tag: len(elements), "od": node.get("od", False)})
        if tag == "D":
            if not all(isinstance(kv, list) and len(kv) == 2 for kv in elements):
                raise _Malformed
            elements = [x for kv in elements for x in kv]
        stack.extend(reversed(elements))
    return tokens


def _container(tag, elements, ordered):
    if tag == "L":
        return elements
    if tag == "U":
        return tuple(elements)
    return (collections.OrderedDict if ordered else dict)(zip(elements[0::2], elements[1::2]))


def _decode(tokens, tensors):
    r"""Rebuild the object from ``_Encoder`` tokens, with an explicit stack."""
    if not isinstance(tokens, list):
        raise _Malformed
    stack = []  # open containers: [tag, elements still to come, elements so far, ordered]
    done = False
    for tok in tokens:
        if done or isinstance(tok, list):
            raise _Malformed  # tokens after the end of the object, or a stray list
        if not isinstance(tok, dict):
            value = tok
        elif "T" in tok:
            key = tok["T"]
            if key not in tensors:
                raise RuntimeError(f"ferrograd.load: the file's metadata names a missing tensor {key!r}")
            value = tensors[key]
            cls = tok.get("cls")
            if cls == "Parameter":
                value = Parameter(value, requires_grad=bool(tok.get("rg", False)))
            else:
                if cls == "Buffer":
                    value = Buffer(value, persistent=tok.get("persistent", True))
                if tok.get("rg", False):
                    value.requires_grad_(True)
        else:
            tag = next((t for t in ("D", "L", "U") if t in tok), None)
            n = tok.get(tag)
            if type(n) is not int or n < 0:
                raise _Malformed
            if len(stack) >= _MAX_DEPTH:
                raise RuntimeError(
                    f"ferrograd.load: nesting deeper than {_MAX_DEPTH} levels of dicts, lists and "
                    "tuples is not supported"
                )
            ordered = bool(tok.get("od", False))
            if n:
                stack.append([tag, 2 * n if tag == "D" else n, [], ordered])
                continue
            value = _container(tag, [], ordered)
        # place the value; each container it completes is placed in turn
        while stack:
            top = stack[-1]
            top[2].append(value)
            top[1] -= 1
            if top[1]:
                break
            stack.pop()
            value = _container(top[0], top[2], top[3])
        else:
            done, result = True, value
    if not done:
        raise _Malformed  # no tokens, or they end inside a container
    return result


# --- safe globals (for ``load(weights_only=True)``)
# PyTorch's weights-only unpickler loads only the globals it allows and those added here.
# ferrograd never unpickles: every file loads as weights only, whatever ``weights_only`` says,
# and no global is ever looked up. The list is kept as PyTorch keeps it, so that scripts that
# register their classes run unchanged.

_marked_safe_globals_set: set = set()


def add_safe_globals(safe_globals):
    """Marks the given globals (functions or classes, or ``(global, "module.name")`` pairs) as
    safe for ``weights_only`` load."""
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set.union(set(safe_globals))


def get_safe_globals():
    """The user-added globals that are safe for ``weights_only`` load."""
    return list(_marked_safe_globals_set)


def clear_safe_globals():
    """Clears the list of globals that are safe for ``weights_only`` load."""
    global _marked_safe_globals_set
    _marked_safe_globals_set = set()


def _remove_safe_globals(safe_globals):
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set - set(safe_globals)


class safe_globals:
    r"""Context manager that adds globals as safe for ``weights_only`` load inside the block
    (and removes them again on exit)."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _remove_safe_globals(self.safe_globals)


def _check_map_location(map_location):
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
    RuntimeError: nothing is ever unpickled, whatever ``weights_only`` says (every load is
    a weights-only load, so the globals of :func:`add_safe_globals` / :class:`safe_globals`
    are never needed). ``map_location`` may only name the CPU.
    """
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
                "support (supported: " + ", ".join(sorted(_SAFETENSORS_DTYPES)) + ")"
            )
    bf16 = [name for name, info in header.items() if name != "__metadata__"
            and info["dtype"] == "BF16"]
    if bf16:
        data = _retag(data, dict.fromkeys(bf16, "U16"))
    try:
        arrays = safetensors.numpy.load(data)
    except safetensors.SafetensorError as e:
        raise RuntimeError(f"{_describe(f)} is not a valid safetensors file: {e}") from None

    # a BOOL tensor's bytes may be anything in a crafted file: stored as 0 / 1
    tensors = {name: _from_array(a, name in bf16) for name, a in arrays.items()}

    if _META_KEY not in metadata:
        return tensors
    malformed = RuntimeError("ferrograd.load: malformed structure in the file's metadata")
    try:
        info = json.loads(metadata[_META_KEY])
        version, structure = info["version"], info["obj"]
    except (ValueError, TypeError, KeyError):
        raise malformed from None
    except RecursionError:
        # only a format-1 file (a JSON tree) can nest this deep; format 2 is flat
        raise RuntimeError(
            "ferrograd.load: the structure in the file's metadata is nested too deeply to read"
        ) from None
    if version not in (1, 2):
        raise RuntimeError(
            f"ferrograd.load: the file was written by a newer ferrograd (format version {version})"
        )
    try:
        return _decode(_v1_tokens(structure) if version == 1 else structure, tensors)
    except (_Malformed, TypeError, ValueError, KeyError, AttributeError):
        raise malformed from None
