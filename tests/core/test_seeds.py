"""The run's seed fan-out: ``base_seed`` follows scikit-learn's ``check_random_state`` rule without importing it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils import check_random_state

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.seeds import base_seed


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), draws=st.integers(0, 3))
def test_the_base_seed_is_the_one_check_random_state_draws(seed, draws):
    """An int, a numpy integer and a RandomState (advanced by some draws) give the draw scikit-learn's rule gives,
    and drawing from a RandomState advances it as that rule does."""
    assert base_seed(seed) == int(check_random_state(seed).randint(2**31 - 1))
    assert base_seed(np.int64(seed)) == base_seed(seed)
    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    for _ in range(draws):
        ours.rand(), theirs.rand()
    assert base_seed(ours) == int(check_random_state(theirs).randint(2**31 - 1))
    assert ours.randint(2**31 - 1) == theirs.randint(2**31 - 1)


def test_none_draws_from_numpys_global_state():
    np.random.seed(11)
    ours = base_seed(None)
    np.random.seed(11)
    assert ours == int(check_random_state(None).randint(2**31 - 1))


@pytest.mark.parametrize("bad", ["7", 1.5, np.random.default_rng(0)])
def test_anything_else_is_refused_by_name(bad):
    with pytest.raises(LwecInputError, match="random_state"):
        base_seed(bad)
