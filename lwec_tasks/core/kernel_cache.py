"""Which of lwec's compiled (numba) kernels have no compiled code cached yet, and the log line that says so.

numba compiles a kernel on its first call and caches the machine code on disk (``cache=True``, in
``__pycache__`` beside the source or under ``$NUMBA_CACHE_DIR``); later processes load it in milliseconds. After
an install or a checkout the cache is empty, and the first run compiles inside its stages: a flow run says so
first (:func:`note_compiling`), and a warm worker compiles them ahead
(:func:`lwec_tasks.worker.warm_kernels.compile_ahead`).

Entry kernels are the ones called from Python: a kernel only called from other kernels (compiled into them,
never cached on its own) is left out of the counts.
"""

from __future__ import annotations

import sys

#: Where the kernels live: every module of these packages that is imported is looked at.
KERNEL_PACKAGES = ("lwec_tasks.core.", "lwec_tasks.stages.")


def entry_kernels() -> list:
    """The numba dispatchers defined in the imported modules of :data:`KERNEL_PACKAGES` that no other of them
    calls by name, sorted by module and name."""
    from numba.core.registry import CPUDispatcher

    kernels = [value for name, module in list(sys.modules.items()) if name.startswith(KERNEL_PACKAGES) and module
               for value in vars(module).values()
               if isinstance(value, CPUDispatcher) and value.__module__ == name]
    called = {called for kernel in kernels for called in kernel.py_func.__code__.co_names}
    unique = {id(kernel): kernel for kernel in kernels if kernel.__name__ not in called}
    return sorted(unique.values(), key=lambda kernel: (kernel.__module__, kernel.__name__))


def uncached(kernels: list) -> list:
    """Those of ``kernels`` (numba dispatchers) with no compiled code in the cache for their current source (no
    cache file, or one made from another version of the source); a kernel whose cache cannot be read counts as
    uncached."""
    missing = []
    for kernel in kernels:
        try:
            cached = bool(kernel._cache._cache_file._load_index())
        except Exception:  # noqa: BLE001 - numba's cache layout changed: treat the kernel as not compiled
            cached = False
        if not cached:
            missing.append(kernel)
    return missing


def compiling_message(missing: int, total: int) -> str:
    """The log line of a run or warm process about to compile ``missing`` of ``total`` kernels."""
    return (f"Compiling {missing} of lwec's {total} numerical kernels (numba; their cache is empty after an install "
            "or a code change): the first stages that use them take up to a few minutes longer, once; later runs "
            "load them from the cache")


def note_compiling(log) -> int:
    """Log :func:`compiling_message` on ``log`` (a logger) at INFO when some entry kernel is not cached; returns
    how many are not."""
    kernels = entry_kernels()
    missing = len(uncached(kernels))
    if missing:
        log.info(compiling_message(missing, len(kernels)))
    return missing
