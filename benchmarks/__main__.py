"""``python -m benchmarks``: time lwec against the references in one run."""

from __future__ import annotations

import argparse
import sys

from benchmarks.options import add_arguments
from benchmarks.runner import main

if __name__ == "__main__":
    parser = add_arguments(argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__))
    sys.exit(main(parser.parse_args()))
