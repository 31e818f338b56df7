"""A mixed table for the end-to-end tests: numeric, text and boolean columns with NULLs, odd column names, and
columns a run leaves out (a high-cardinality code, a constant, a timestamp)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import sqlalchemy as sa


def mixed_frame(n: int = 150, seed: int = 0) -> pd.DataFrame:
    """Three clusters told apart by a numeric column, a text column and a boolean; NULLs in each kind; a
    high-cardinality code, a constant and a timestamp column to leave out."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    frame = pd.DataFrame({"id": np.arange(1, n + 1), "amount (€)": rng.normal(0, 1, n) + 2.5 * y,
                          "size/weight": rng.normal(0, 1, n)})
    frame["colour"] = np.array(["red", "green", "blue"], dtype=object)[y]
    frame["active"] = (y == 1).astype(object)
    frame.loc[rng.random(n) < 0.1, "amount (€)"] = np.nan
    frame.loc[rng.random(n) < 0.1, "colour"] = None
    frame.loc[rng.random(n) < 0.05, "active"] = None
    frame["serial"] = [f"S-{i:06d}" for i in range(n)]
    frame["flat"] = 7.0
    frame["seen"] = pd.Timestamp("2026-01-01") + pd.to_timedelta(np.arange(n), unit="h")
    frame["target"] = y
    return frame


def write_mixed(url: str, table: str, frame: pd.DataFrame) -> None:
    types = {"id": sa.BigInteger(), "amount (€)": sa.Float(), "size/weight": sa.Float(), "colour": sa.Text(),
             "active": sa.Boolean(), "serial": sa.Text(), "flat": sa.Float(), "seen": sa.DateTime(),
             "target": sa.BigInteger()}
    schema = sa.Table(table, sa.MetaData(), *(sa.Column(name, types[name], primary_key=name == "id",
                                                        autoincrement=False) for name in frame.columns))
    records = [{k: (None if v is None or (isinstance(v, float) and np.isnan(v)) else v) for k, v in row.items()}
               for row in frame.astype(object).to_dict(orient="records")]
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        schema.drop(connection, checkfirst=True)
        schema.create(connection)
        connection.execute(sa.insert(schema), records)
    engine.dispose()
