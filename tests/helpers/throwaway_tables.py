"""A features table under a fresh name for one test, dropped afterwards with the labels the flows wrote from it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, unique, write_frame


@contextmanager
def throwaway_features_table(url: str, prefix: str, frame: pd.DataFrame) -> Iterator[str]:
    """Write ``frame`` as a table named ``<prefix>_…`` and yield that name; on leaving, however the block ends, drop
    the table and its default labels table ``<name>_lwec_labels`` (with the latest-run view)."""
    table = unique(prefix)
    write_frame(url, table, frame)
    try:
        yield table
    finally:
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            drop_labels_table(connection, f"{table}_lwec_labels")
            sa.Table(table, sa.MetaData()).drop(connection, checkfirst=True)
        engine.dispose()
