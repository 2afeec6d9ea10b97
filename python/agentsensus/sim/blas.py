"""One BLAS thread for the length of a run (best effort, restored after).

The simulation's matrix products are small (an owner's rows times one
query), and on a shared two-core machine a multi-threaded BLAS spends more
time waiting for its threads than computing: a 12k x 384 product took 16 ms
with OpenBLAS's threads under load and 3 ms on one. numpy reads the thread
count only when it loads, so it is set through the bundled OpenBLAS itself;
where that library is not found, nothing changes.
"""

from __future__ import annotations

import ctypes
import glob
import os
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["single_blas_thread"]

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def _openblas() -> tuple[Any, Any] | None:
    import numpy

    root = os.path.dirname(numpy.__file__)
    for path in glob.glob(os.path.join(root, "..", "numpy.libs", "*openblas*")) + glob.glob(
        os.path.join(root, ".dylibs", "*openblas*")
    ):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            return setter, getter
    return None


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the block with one OpenBLAS thread; the previous count comes back after."""
    found = _openblas()
    if found is None:
        yield
        return
    setter, getter = found
    before = int(getter())
    setter(1)
    try:
        yield
    finally:
        setter(before)
