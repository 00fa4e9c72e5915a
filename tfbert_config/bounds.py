"""Bounds on configuration values, checked where a config is made.

A library config (e.g. `tfbert.training.TrainingConfig`) names its own
parameters in its errors; a program that fills it from flags turns
`ParameterError.parameter` into the flag's name.
"""

import math
import numbers


class ParameterError(ValueError):
    """`parameter` is `value`, outside `bounds` (text such as "in (0, 1]")."""

    def __init__(self, parameter, value, bounds):
        super().__init__(f"{parameter} must be {bounds}, got {value}")
        self.parameter = parameter
        self.value = value
        self.bounds = bounds


def check_bounds(parameter, value, low=None, high=None, *, low_open=False):
    """Raises `ParameterError` unless `value` is a finite real number with
    `low <= value <= high` (`low < value` with `low_open`; a bound of None is
    no bound)."""
    if low is not None and high is not None:
        bounds = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
    elif low is not None:
        bounds = f"{'>' if low_open else '>='} {low:g}"
    else:
        bounds = f"<= {high:g}"
    inside = (isinstance(value, numbers.Real) and not isinstance(value, bool)
              and math.isfinite(value)
              and (low is None or (value > low if low_open else value >= low))
              and (high is None or value <= high))
    if not inside:
        raise ParameterError(parameter, value, bounds)
