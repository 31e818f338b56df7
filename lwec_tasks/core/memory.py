"""Guards that refuse dense computations which would not fit in memory."""

from __future__ import annotations

import os

from lwec_tasks.core.errors import LwecMemoryError

# Leave room for the rest of the process (inputs, outputs, interpreter).
_USABLE_FRACTION = 0.8


def available_memory_bytes() -> int:
    """Bytes of memory currently available, from ``LWEC_MEMORY_LIMIT_BYTES`` if set,
    else MemAvailable in /proc/meminfo, else total physical memory."""
    override = os.environ.get("LWEC_MEMORY_LIMIT_BYTES")
    if override:
        return int(override)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def readable_size(n_bytes: int) -> str:
    """``n_bytes`` in GiB from 1 GiB up, else in MiB (e.g. '12.4 MiB', '3.20 GiB')."""
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.2f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def ensure_fits(n_bytes: int, what: str, hint: str = "") -> None:
    """Raise :class:`LwecMemoryError` if ``n_bytes`` exceeds the usable memory."""
    usable = int(available_memory_bytes() * _USABLE_FRACTION)
    if n_bytes > usable:
        message = f"{what} needs {readable_size(n_bytes)} but only {readable_size(usable)} of memory is usable"
        raise LwecMemoryError(f"{message}; {hint}" if hint else message)
