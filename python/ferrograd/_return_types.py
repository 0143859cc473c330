"""The named tuples of ``max``, ``min``, ``sort``, ``topk``, ``cummax``, ``median``, ...
((values, indices)) and ``aminmax`` ((min, max)): PyTorch's ``torch.return_types``."""

from collections import namedtuple


def _return_type(name, fields=("values", "indices")):
    """A named tuple (``fields``, by default (values, indices)) printed as
    ``torch.return_types.<name>(...)``."""
    base = namedtuple(name, fields)

    def __repr__(self):
        items = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{items})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__})


max_result = _return_type("max")
min_result = _return_type("min")
sort_result = _return_type("sort")
topk_result = _return_type("topk")
cummax_result = _return_type("cummax")
cummin_result = _return_type("cummin")
median_result = _return_type("median")
nanmedian_result = _return_type("nanmedian")
mode_result = _return_type("mode")
kthvalue_result = _return_type("kthvalue")
aminmax_result = _return_type("aminmax", ("min", "max"))
