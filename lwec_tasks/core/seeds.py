"""Reproducible seeding: one user seed fans out to independent per-step seeds."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state


def base_seed(random_state) -> int:
    """Draw one 31-bit seed from ``random_state`` (None, int or RandomState)."""
    return int(check_random_state(random_state).randint(2**31 - 1))


def derived_seed(base: int, *keys: int) -> int:
    """A seed determined by ``base`` and ``keys`` alone (e.g. one per k)."""
    return int(np.random.SeedSequence([base, *keys]).generate_state(1)[0] & 0x7FFFFFFF)
