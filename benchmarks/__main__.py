"""``python -m benchmarks``: time lwec against the references, or the whole pipeline (see :mod:`benchmarks.cli`)."""

from __future__ import annotations

import sys

from benchmarks.cli import main

if __name__ == "__main__":
    sys.exit(main())
