"""Reproducible seeding: one user seed fans out to independent per-step seeds."""

from __future__ import annotations

import numbers

import numpy as np

from lwec_tasks.core.errors import LwecInputError


def base_seed(random_state) -> int:
    """Draw one 31-bit seed from ``random_state``: None (numpy's global RandomState), an int (a fresh
    ``RandomState(int)``) or a RandomState (drawn from, so it advances) — scikit-learn's ``check_random_state``
    rule, without importing scikit-learn."""
    if random_state is None:
        state = np.random.mtrand._rand
    elif isinstance(random_state, numbers.Integral):
        state = np.random.RandomState(random_state)
    elif isinstance(random_state, np.random.RandomState):
        state = random_state
    else:
        raise LwecInputError(f"random_state must be None, an int or a numpy RandomState; got {random_state!r}")
    return int(state.randint(2**31 - 1))


def derived_seed(base: int, *keys: int) -> int:
    """A seed determined by ``base`` and ``keys`` alone (e.g. one per k)."""
    return int(np.random.SeedSequence([base, *keys]).generate_state(1)[0] & 0x7FFFFFFF)
