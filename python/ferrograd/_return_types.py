"""The (values, indices) named tuples of ``max``, ``min``, ``sort`` and ``topk``
(PyTorch's ``torch.return_types``)."""

from collections import namedtuple


def _return_type(name):
    """A (values, indices) named tuple printed as ``torch.return_types.<name>(...)``."""
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__})


max_result = _return_type("max")
min_result = _return_type("min")
sort_result = _return_type("sort")
topk_result = _return_type("topk")
