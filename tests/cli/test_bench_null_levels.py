"""``python -m benchmarks.null_levels``: its tables' NULLs and its report."""

from __future__ import annotations

import numpy as np

from benchmarks.null_levels import markdown, null_table


def test_the_nulls_fall_at_random_or_exactly_on_the_last_group():
    frame, y = null_table(seed=1, k=4, null_share=0.1)
    nulls = frame["city"].isna().to_numpy()
    assert abs(nulls.mean() - 0.1) < 0.02 and all(nulls[y == g].any() for g in range(4))
    named = frame.loc[~nulls, "city"].to_numpy()
    np.testing.assert_array_equal(named, np.array([f"city{g}" for g in y[~nulls]]))
    frame, y = null_table(seed=1, k=4, null_share=0.0)
    np.testing.assert_array_equal(frame["city"].isna().to_numpy(), y == 3)


def test_the_report_pairs_each_tables_runs_and_averages_the_random_nulls():
    rows = []
    for nulls, k, auto_nmi in (("5% at random", 3, 0.7), ("the last group", 3, 1.0), ("10% at random", 4, 0.9)):
        rows += [{"nulls": nulls, "true k": k, "given": "auto", "k": k + 1, "nmi": auto_nmi, "null treatment": "x"},
                 {"nulls": nulls, "true k": k, "given": str(k), "k": k, "nmi": 0.99, "null treatment": "x"}]
    table = markdown(rows)
    assert "| 5% at random | 3 | x | 4 | 0.700 | 0.990 |" in table
    assert "**0.800**" in table  # (0.7 + 0.9) / 2: the last group's run is not a random-NULL table
