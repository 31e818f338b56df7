"""Loading base-clustering pools from .mat, .npz, .csv and SQL tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.io
import sqlalchemy as sa

from lwec_tasks import LwecInputError
from lwec_tasks.experiments.pools import load_pool

MEMBERS = np.array([[1, 2, 1], [1, 2, 2], [2, 1, 2], [2, 1, 3], [3, 1, 3]])
TRUTH = np.array([0, 0, 1, 1, 2])


def test_mat_with_double_members_and_column_truth(tmp_path):
    path = tmp_path / "bc_pool_TOY.mat"
    scipy.io.savemat(path, {"members": MEMBERS.astype(np.float64), "gt": TRUTH[:, None] + 1})
    pool = load_pool(path)
    assert pool.name == "TOY"
    assert pool.members.dtype == np.int64
    np.testing.assert_array_equal(pool.members, MEMBERS)
    np.testing.assert_array_equal(pool.truth, TRUTH + 1)
    assert (pool.n_objects, pool.n_candidates, pool.n_classes) == (5, 3, 3)


def test_npz_without_truth(tmp_path):
    path = tmp_path / "mine.npz"
    np.savez(path, members=MEMBERS)
    pool = load_pool(path)
    assert pool.truth is None and pool.n_classes is None
    np.testing.assert_array_equal(pool.members, MEMBERS)


def test_csv_truth_column_is_split_off(tmp_path):
    path = tmp_path / "pool.csv"
    frame = pd.DataFrame(MEMBERS, columns=["a", "b", "c"]).assign(cls=TRUTH)
    frame.to_csv(path, index=False)
    pool = load_pool(path, truth="cls")
    np.testing.assert_array_equal(pool.members, MEMBERS)
    np.testing.assert_array_equal(pool.truth, TRUTH)
    # With the default truth name "gt" absent, every column is a clustering.
    assert load_pool(path).members.shape == (5, 4)


def test_sql_table_by_reflection(tmp_path):
    url = f"sqlite:///{tmp_path / 'pools.db'}"
    engine = sa.create_engine(url)
    frame = pd.DataFrame(MEMBERS, columns=["bc 1", "bc-2", "bc3"]).assign(gt=TRUTH)
    frame.to_sql("my pool", engine, index=False)
    engine.dispose()
    pool = load_pool(url, table="my pool")
    assert pool.name == "my pool"
    np.testing.assert_array_equal(pool.members, MEMBERS)
    np.testing.assert_array_equal(pool.truth, TRUTH)
    with pytest.raises(LwecInputError, match=r"table 'x; drop table' not found.*\['my pool'\]"):
        load_pool(url, table="x; drop table")
    with pytest.raises(LwecInputError, match="needs a table name"):
        load_pool(url)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"members": MEMBERS, "gt": TRUTH[:3]}, "ground truth has 3 entries but members has 5 rows"),
        ({"members": np.where(MEMBERS == 3, np.nan, MEMBERS)}, "missing value"),
        ({"members": MEMBERS + 0.5}, "non-integer label"),
        ({"labels": MEMBERS}, "no 'members' array"),
        ({"members": MEMBERS[:, 0]}, "must be N × P"),
    ],
)
def test_bad_npz_content(tmp_path, content, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **content)
    with pytest.raises(LwecInputError, match=message):
        load_pool(path)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(LwecInputError, match="pool file not found"):
        load_pool(tmp_path / "nope.mat")
    other = tmp_path / "pool.parquet"
    other.write_text("x")
    with pytest.raises(LwecInputError, match="unknown pool format '.parquet'"):
        load_pool(other)
