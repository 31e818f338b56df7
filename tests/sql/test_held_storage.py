"""Held runs in the labels storage: shown by ``<out>``, left out of ``<out>_latest`` until promoted; storage of an
earlier release (a runs table without ``held``) gains the column, and a ``_latest`` view that leaves held runs out,
at its next write."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import unique
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import LabelRows, ensure_latest_view, promote_run, write_labels
from lwec_tasks.io.history import create_view, drop_view, latest_labels_query
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_tables import execute_ddl, quoted


def run_keys(engine: sa.Engine, relation: str) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.execute(sa.select(sa.column("run_key")).distinct()
                                         .select_from(sa.table(relation))).scalars())


def rows(run_key: str, held: bool, labels: int = 0) -> LabelRows:
    return LabelRows(run_key=run_key, k=2, method="lwea", theta=0.4, ensemble_size=3, seed=0, source_table="src",
                     ids=np.arange(5), labels=np.full(5, labels), held=held)


def as_earlier_release(engine: sa.Engine, output: str) -> None:
    """Drop the ``held`` column and make ``_latest`` as an earlier release made it."""
    names = storage_names(parse_table_name(output))
    with engine.begin() as connection:
        drop_view(connection, names.latest)
        execute_ddl(connection, f"ALTER TABLE {quoted(connection, names.runs)} DROP COLUMN held")
        create_view(connection, names.latest, latest_labels_query(parse_table_name(output), confidence=True))


def test_held_runs_stay_out_of_latest_until_promoted(engine):
    output = unique("held")
    write_labels(engine, parse_table_name(output), rows("night1", held=False))
    ensure_latest_view(engine, parse_table_name(output))
    as_earlier_release(engine, output)

    # gains the column; _latest made again
    write_labels(engine, parse_table_name(output), rows("night2", held=True, labels=1))
    assert run_keys(engine, output) == ["night1", "night2"]
    assert run_keys(engine, f"{output}_latest") == ["night1"]

    promote_run(engine, parse_table_name(output), "night2")
    assert run_keys(engine, f"{output}_latest") == ["night2"]
    with pytest.raises(LwecInputError, match="holds no published run with run_key 'night3' to promote"):
        promote_run(engine, parse_table_name(output), "night3")
