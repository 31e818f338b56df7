"""Loading a base-clustering pool: the candidate clusterings an ensemble is drawn from.

A pool is an N × P integer label matrix (one candidate base clustering per
column) plus, optionally, the ground-truth class of every object. Accepted
sources:

- the paper authors' MATLAB files (``.mat``: ``members`` N × P, ``gt`` N × 1);
- ``.npz`` archives with arrays ``members`` and optionally ``gt``;
- ``.csv`` files with one column per base clustering and an optional
  ground-truth column (default name ``gt``);
- a SQL table, given as a SQLAlchemy database URL plus a table name; the table
  is reflected and its columns used like the CSV's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lwec_tasks.core.ensemble import _integer_column
from lwec_tasks.core.errors import LwecInputError

#: Name of the ground-truth variable / column unless the caller says otherwise.
DEFAULT_TRUTH = "gt"
#: Name of the label-matrix variable in .mat and .npz pools.
MEMBERS = "members"


@dataclass(frozen=True)
class Pool:
    """A base-clustering pool.

    Attributes
    ----------
    members : ndarray of shape (N, P), int64 — candidate base clusterings
    truth : ndarray of shape (N,), int64, or None when the pool has no ground truth
    name : short name used in reports (file stem, e.g. ``LR`` for ``bc_pool_LR.mat``)
    """

    members: np.ndarray
    truth: np.ndarray | None
    name: str

    @property
    def n_objects(self) -> int:
        return self.members.shape[0]

    @property
    def n_candidates(self) -> int:
        return self.members.shape[1]

    @property
    def n_classes(self) -> int | None:
        return None if self.truth is None else len(np.unique(self.truth))


def load_pool(source: str | Path, table: str | None = None, truth: str | None = DEFAULT_TRUTH,
              name: str | None = None) -> Pool:
    """Load a pool from a ``.mat``/``.npz``/``.csv`` file or a SQL table.

    Parameters
    ----------
    source : path to a file, or a SQLAlchemy database URL (then ``table`` is required)
    table : table name in the database's default schema (SQL sources only)
    truth : name of the ground-truth variable/column, default ``"gt"``; a pool
        without it loads with ``truth=None``. Pass None to ignore ground truth.
    name : report name; default derived from the file or table name

    Raises
    ------
    LwecInputError
        Missing file, unknown format, missing ``members``, non-integer labels,
        ground truth of the wrong length, unknown table.
    """
    text = str(source)
    if "://" in text:
        if not table:
            raise LwecInputError("a database URL needs a table name (--table) to read a pool from")
        frame = _read_sql_table(text, table)
        members, gt = _split_frame(frame, truth, f"table {table!r}")
        return _make_pool(members, gt, name or table)
    if table:
        raise LwecInputError(f"--table is only used with a database URL, not with file {text!r}")
    path = Path(text)
    if not path.is_file():
        raise LwecInputError(f"pool file not found: {text}")
    suffix = path.suffix.lower()
    if suffix == ".mat":
        members, gt = _read_arrays(_load_mat(path), truth, path)
    elif suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            members, gt = _read_arrays(dict(archive), truth, path)
    elif suffix == ".csv":
        members, gt = _split_frame(pd.read_csv(path), truth, f"file {path.name!r}")
    else:
        raise LwecInputError(f"unknown pool format {suffix or '(no suffix)'!r} for {text}: "
                             "use .mat, .npz, .csv or a database URL with --table")
    return _make_pool(members, gt, name or _stem_name(path))


def _stem_name(path: Path) -> str:
    stem = path.stem
    return stem[len("bc_pool_"):] if stem.startswith("bc_pool_") else stem


def _load_mat(path: Path) -> dict:
    import scipy.io

    try:
        return scipy.io.loadmat(path)
    except (ValueError, NotImplementedError, OSError) as error:
        raise LwecInputError(f"cannot read {path} as a MATLAB v5 .mat file: {error}") from error


def _read_arrays(arrays: dict, truth: str | None, path: Path):
    if MEMBERS not in arrays:
        found = sorted(k for k in arrays if not k.startswith("__"))
        raise LwecInputError(f"{path.name} has no {MEMBERS!r} array (found: {found})")
    members = np.asarray(arrays[MEMBERS])
    if members.ndim != 2:
        raise LwecInputError(f"{path.name}: {MEMBERS!r} must be N × P, got shape {members.shape}")
    gt = None
    if truth is not None and truth in arrays:
        gt = np.asarray(arrays[truth])
        if gt.ndim == 2 and 1 in gt.shape:
            gt = gt.ravel()
        if gt.ndim != 1:
            raise LwecInputError(f"{path.name}: {truth!r} must be a vector, got shape {gt.shape}")
    return members, gt


def _split_frame(frame: pd.DataFrame, truth: str | None, where: str):
    gt = None
    if truth is not None and truth in frame.columns:
        gt = frame[truth].to_numpy()
        frame = frame.drop(columns=[truth])
    if frame.shape[1] == 0:
        raise LwecInputError(f"{where} has no base-clustering columns")
    return frame, gt


def _make_pool(members, gt, name: str) -> Pool:
    if isinstance(members, pd.DataFrame):
        columns = [(str(c), members[c].to_numpy()) for c in members.columns]
    else:
        columns = [(f"column {j}", members[:, j]) for j in range(members.shape[1])]
    if not columns or len(columns[0][1]) < 2:
        raise LwecInputError(f"pool {name!r} is empty or has fewer than 2 objects")
    matrix = np.column_stack([_integer_column(np.asarray(c), label) for label, c in columns])
    truth = None
    if gt is not None:
        if len(gt) != matrix.shape[0]:
            raise LwecInputError(f"pool {name!r}: ground truth has {len(gt)} entries but members has "
                                 f"{matrix.shape[0]} rows")
        truth = _integer_column(np.asarray(gt), "ground truth")
    return Pool(matrix, truth, name)


def _read_sql_table(url: str, table: str) -> pd.DataFrame:
    import sqlalchemy as sa

    from lwec_tasks.io.connection import opened_engine

    with opened_engine(url) as engine:
        names = sa.inspect(engine).get_table_names()
        if table not in names:
            raise LwecInputError(f"table {table!r} not found; the database has tables {sorted(names)}")
        reflected = sa.Table(table, sa.MetaData(), autoload_with=engine)
        with engine.connect() as connection:
            rows = connection.execute(sa.select(reflected)).all()
        return pd.DataFrame(rows, columns=[c.name for c in reflected.columns])
