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

# torch.linalg's (and torch.slogdet's)
linalg_inv_ex_result = _return_type("linalg_inv_ex", ("inverse", "info"))
linalg_cholesky_ex_result = _return_type("linalg_cholesky_ex", ("L", "info"))
linalg_solve_ex_result = _return_type("linalg_solve_ex", ("result", "info"))
linalg_slogdet_result = _return_type("linalg_slogdet", ("sign", "logabsdet"))
slogdet_result = _return_type("slogdet", ("sign", "logabsdet"))
linalg_qr_result = _return_type("linalg_qr", ("Q", "R"))
linalg_svd_result = _return_type("linalg_svd", ("U", "S", "Vh"))
linalg_eigh_result = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_lstsq_result = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_lu_factor_result = _return_type("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex_result = _return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu_result = _return_type("linalg_lu", ("P", "L", "U"))
lu_unpack_result = _return_type("lu_unpack", ("P", "L", "U"))
triangular_solve_result = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
