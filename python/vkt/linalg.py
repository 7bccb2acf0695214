"""vkt.linalg: the linear-algebra namespace, as torch.linalg (the functions are C, in vkt._C)."""
from ._C import _linalg_matrix_norm as matrix_norm  # noqa: F401
from ._C import _linalg_vector_norm as vector_norm  # noqa: F401
from .functional import linalg_cross as cross  # noqa: F401,E402
