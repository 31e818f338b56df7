"""Entry point of one benchmark subprocess: ``python -m benchmarks.child NAME SPEC REPEATS OUT``.

Prints one JSON line with the figures; saves labels (if any) to OUT (.npy).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from benchmarks.cases import run_case


def main(argv: list[str]) -> int:
    name, spec, repeats, out = argv
    info, labels = run_case(name, spec, int(repeats))
    if labels is not None:
        np.save(out, labels)
    print("RESULT " + json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
