"""Argument checks shared by every module: each refusal is a ValueError that names the argument,
raised before any work starts, so no bad value reaches the native core."""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Sequence

import numpy as np

_U64 = 2**64


def _name(argument: str, message: str) -> ValueError:
    return ValueError(f"{argument}: {message}")


def real(argument: str, value: Any) -> float:
    """A finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _name(argument, f"expected a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise _name(argument, f"{v} is not a finite number")
    return v


def positive(argument: str, value: Any) -> float:
    v = real(argument, value)
    if v <= 0:
        raise _name(argument, f"{v} must be positive")
    return v


def non_negative(argument: str, value: Any) -> float:
    v = real(argument, value)
    if v < 0:
        raise _name(argument, f"{v} must not be negative")
    return v


def open_unit(argument: str, value: Any) -> float:
    """A probability strictly between 0 and 1 (a δ)."""
    v = real(argument, value)
    if not 0 < v < 1:
        raise _name(argument, f"{v} must lie strictly between 0 and 1")
    return v


def rate(argument: str, value: Any) -> float:
    """A sampling rate in (0, 1]."""
    v = real(argument, value)
    if not 0 < v <= 1:
        raise _name(argument, f"{v} must lie in (0, 1]; use None for no subsampling")
    return v


def fraction(argument: str, value: Any) -> float:
    """A fraction in [0, 1]."""
    v = real(argument, value)
    if not 0 <= v <= 1:
        raise _name(argument, f"{v} must lie in [0, 1]")
    return v


def integer(argument: str, value: Any, minimum: int = 0, maximum: int = _U64 - 1) -> int:
    """An integer (not a bool) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _name(argument, f"expected an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if v < minimum:
        raise _name(argument, f"{v} must be at least {minimum}")
    if v > maximum:
        raise _name(argument, f"{v} must be at most {maximum}")
    return v


def seed(argument: str, value: Any) -> Optional[int]:
    """None (randomness from the operating system) or a seed in [0, 2^64)."""
    if value is None:
        return None
    return integer(argument, value, 0, _U64 - 1)


def choice(argument: str, value: Any, options: Sequence[str]) -> str:
    if value not in options:
        listed = ", ".join(repr(o) for o in options)
        raise _name(argument, f"{value!r} is not one of {listed}")
    return value


def optional(check, argument: str, value: Any, *rest):
    return None if value is None else check(argument, value, *rest)


def array(
    argument: str, value: Any, ndim: int, shape: Sequence[Optional[int]] = (), finite: bool = True
) -> np.ndarray:
    """A real-valued array of `ndim` dimensions (`shape` entries checked where not None), finite,
    returned as a new or existing C-contiguous float64 array. `finite=False` leaves the finiteness
    check to the native side, which makes it while copying (large arrays: one pass, not two)."""
    try:
        a = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - numpy raises many kinds for ragged input
        raise _name(argument, f"cannot be read as an array: {e}") from None
    if a.dtype.kind not in "fiu":
        raise _name(
            argument,
            f"dtype {a.dtype} is not a real number type; pass floats "
            f"(e.g. np.asarray(x, dtype=np.float64))",
        )
    if a.ndim != ndim:
        raise _name(argument, f"expected a {ndim}-D array, got shape {a.shape}")
    for axis, (want, got) in enumerate(zip(shape, a.shape)):
        if want is not None and want != got:
            raise _name(argument, f"shape {a.shape}: axis {axis} must have length {want}")
    if a.size == 0:
        raise _name(argument, f"is empty (shape {a.shape})")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if finite and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise _name(argument, f"contains NaN or infinite values (first at index {tuple(bad)})")
    return a


def matrix(
    argument: str, value: Any, rows: Optional[int] = None, cols: Optional[int] = None, finite: bool = True
) -> np.ndarray:
    return array(argument, value, 2, (rows, cols), finite)


def vector(argument: str, value: Any, length: Optional[int] = None) -> np.ndarray:
    return array(argument, value, 1, (length,))


def labels(argument: str, value: Any, length: Optional[int] = None) -> np.ndarray:
    """Class numbers 0, 1, 2, … as int64."""
    a = np.asarray(value)
    if a.ndim != 1:
        raise _name(argument, f"expected a 1-D array of class numbers, got shape {a.shape}")
    if length is not None and a.shape[0] != length:
        raise _name(argument, f"{a.shape[0]} labels for {length} rows")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all() or (a != np.round(a)).any():
            raise _name(argument, "class numbers must be whole numbers 0, 1, 2, …")
    elif a.dtype.kind not in "iu":
        raise _name(argument, f"dtype {a.dtype}: class numbers must be integers 0, 1, 2, …")
    a = a.astype(np.int64)
    if a.size and a.min() < 0:
        raise _name(argument, f"{a.min()} is not a class number 0, 1, 2, …")
    return np.ascontiguousarray(a)


def round_half_away(x: float) -> int:
    """Rust's f64::round for x ≥ 0 (halves away from zero; Python's round() goes to even), so
    split sizes computed here equal the CLI's."""
    return int(math.floor(x + 0.5))
