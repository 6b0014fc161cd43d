"""The compiled twins of hot pure functions (``rocketpy._speedups``, the accelerated build).

They are used when the extension was built and the environment variable ``ROCKETPY_PURE`` is not set;
the pure-Python functions stay the reference the tests hold them to.
"""

from __future__ import annotations

import os
from typing import Any


def compiled(name: str) -> Any:
    """``rocketpy._speedups.<name>``, or None (not built, or ROCKETPY_PURE set)."""
    if os.environ.get("ROCKETPY_PURE"):
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(_speedups, name, None)
