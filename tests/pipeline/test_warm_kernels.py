"""lwec's compiled kernels: a run says when they are not compiled yet; the warm process compiles them ahead."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from helpers.pipeline import PROJECT_ROOT

# The modules whose kernels a consensus run calls (as flows.consensus imports them, without Prefect).
KERNEL_MODULES = ("lwec_tasks.stages.read", "lwec_tasks.stages.generate", "lwec_tasks.stages.ensemble",
                  "lwec_tasks.stages.consensus", "lwec_tasks.stages.evidence", "lwec_tasks.stages.model",
                  "lwec_tasks.stages.write")


def test_a_run_says_when_its_kernels_are_not_compiled_yet(tmp_path):
    script = ("import importlib, logging, sys\n"
              f"for name in {KERNEL_MODULES!r}: importlib.import_module(name)\n"
              "from lwec_tasks.core.kernel_cache import entry_kernels, note_compiling\n"
              "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s', force=True)\n"
              "print(len(entry_kernels()), note_compiling(logging.getLogger('run')))\n")
    # An empty cache, as after an install: numba looks in $NUMBA_CACHE_DIR first.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PROJECT_ROOT,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}, timeout=120)
    assert done.returncode == 0, done.stderr
    message, counts = done.stdout.strip().splitlines()
    total, missing = map(int, counts.split())
    assert total == missing >= 10
    assert message.startswith(f"Compiling {total} of lwec's {total} numerical kernels (numba;")
    assert "later runs load them from the cache" in message


def test_the_warm_up_leaves_every_kernel_a_run_uses_in_the_cache(caplog):
    import importlib

    for name in KERNEL_MODULES:
        importlib.import_module(name)
    from lwec_tasks.core.kernel_cache import entry_kernels, uncached
    from lwec_tasks.worker.warm_kernels import compile_ahead

    log = logging.getLogger("lwec-warm-test")
    with caplog.at_level(logging.INFO, logger=log.name):
        missing = compile_ahead(log)
    assert uncached(entry_kernels()) == []
    lines = [record.getMessage() for record in caplog.records]
    # Compiled now (and said so) or found in the cache (and nothing said).
    assert (missing and lines[0].startswith("Compiling") and lines[-1].startswith("Compiled the kernels in")) or \
        (not missing and lines == [])
