"""``ferrograd.utils.hooks``: handles that remove hooks (PyTorch's ``torch.utils.hooks``)."""

import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle"]


class RemovableHandle:
    r"""A handle which provides the capability to remove a hook."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1

        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra_dict = ref()
            if extra_dict is not None and self.id in extra_dict:
                del extra_dict[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        if state[0] is None:
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        if len(state) < 3 or state[2] is None:
            self.extra_dict_ref = ()
        else:
            self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2])

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


class _NativeHooks:
    """The hooks dict of a handle whose hook the native graph holds: deleting the handle's id
    calls ``remover(native id)``, which holds no strong reference to the node or tensor."""

    __slots__ = ("_remover", "_ids", "__weakref__")

    def __init__(self, remover):
        self._remover = remover
        self._ids = {}

    def __contains__(self, handle_id):
        return handle_id in self._ids

    def __delitem__(self, handle_id):
        self._remover(self._ids.pop(handle_id))


def _native_handle(remover, native_id):
    """A ``RemovableHandle`` for a hook registered in the native graph."""
    hooks = _NativeHooks(remover)
    handle = RemovableHandle(hooks)
    hooks._ids[handle.id] = native_id
    handle._native_hooks = hooks  # the handle's weak reference needs an owner
    return handle
