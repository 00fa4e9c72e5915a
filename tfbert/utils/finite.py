"""Refusing NaN and infinite weights (a diverged run)."""

import numpy as np


class NonFiniteError(ArithmeticError):
    """A loss or weights that are NaN or infinite."""


def first_non_finite(variables):
    """The name of the first floating-point variable in `variables` holding a
    NaN or an infinity, or None if all are finite."""
    for variable in variables:
        value = np.asarray(variable)
        if np.issubdtype(value.dtype, np.floating) or value.dtype.name == "bfloat16":
            if not np.isfinite(value.astype(np.float32)).all():
                return getattr(variable, "path", None) or variable.name
    return None
