"""Removing what earlier runs left in a labels storage: the tables of deleted runs, and abandoned runs.

Every write (of any run key) calls :func:`remove_leftovers` after it publishes. It removes

* the tables of runs deleted by publishing or pruning (PostgreSQL: a deleted run's table is dropped after the
  transaction that deleted it, :func:`lwec_tasks.io.history.delete_runs`);
* abandoned runs: unpublished runs, their own tables and staging tables, left by a write that was killed
  or lost its connection. On PostgreSQL a run is abandoned when no live run holds its advisory lock
  (:class:`~lwec_tasks.io.locks.RunLock`); elsewhere, when it began more than :data:`GRACE_SECONDS` ago.

Each run is removed in a transaction of its own whose lock waits are bounded
(:func:`~lwec_tasks.io.locks.bound_lock_waits`). A ``DROP`` that cannot get its lock in that time — a
dashboard's open transaction still reading the view, say — is given up together with the rest: they are
*deferred* to a later run, which the returned :class:`Leftovers` says (and :meth:`Leftovers.log` logs);
this is no error.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa

from lwec_tasks.io.catalog import NARROW, labels_layout
from lwec_tasks.io.errors import DatabaseRefusedError, DatabaseUnreachableError, database_errors
from lwec_tasks.io.label_storage import StorageNames, runs_clause, runs_table, storage_names
from lwec_tasks.io.locks import LOCK_WAIT_SECONDS, bound_lock_waits, is_lock_timeout, run_is_abandoned
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_tables import drop_run_rows, execute_ddl, partitioned, quoted

#: Elsewhere than on PostgreSQL (no advisory locks): an unpublished run older than this (seconds) is abandoned.
GRACE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Leftovers:
    """What :func:`remove_leftovers` did to ``table``: the runs whose leftovers it ``removed``, and those it
    ``deferred`` (a lock held by another session; a later run removes them)."""

    table: str
    removed: tuple[int, ...] = ()
    deferred: tuple[int, ...] = ()

    def message(self) -> str | None:
        """One line for the log, or None when there was nothing to remove."""
        parts = []
        if self.removed:
            parts.append(f"removed the tables of {len(self.removed)} deleted or abandoned run(s) of table "
                         f"{self.table!r}")
        if self.deferred:
            parts.append(f"deferred removing the tables of {len(self.deferred)} deleted or abandoned run(s) of table "
                         f"{self.table!r}: another session (an open transaction that read the view, say) held "
                         f"a lock on them for more than {LOCK_WAIT_SECONDS:g} s; a later run removes them")
        return "; ".join(parts).capitalize() if parts else None

    def log(self, log) -> None:
        """Log :meth:`message` on ``log`` (a logger), if any."""
        message = self.message()
        if message:
            log.info("%s", message)


def remove_leftovers(engine: sa.Engine, output_table: TableName | StorageNames, *,
                     now: dt.datetime | None = None) -> Leftovers:
    """Remove the tables of deleted runs and the abandoned runs of ``output_table``'s storage (module docstring);
    stops at the first lock not granted in time and defers the rest. ``now`` (default: the clock) dates runs
    elsewhere than on PostgreSQL. Database errors other than lock waits are raised as
    :mod:`lwec_tasks.io.errors` describes."""
    names = storage_names(output_table)
    found = Leftovers(str(names.view))
    with database_errors(engine, f"read the runs of table {str(names.view)!r}"), engine.connect() as connection:
        if labels_layout(connection, names) != NARROW:
            return found
        runs = runs_table(names)  # typed: SQLite's written_at read as a datetime
        states = {row.run: (row.published, row.written_at)
                  for row in connection.execute(sa.select(runs.c.run, runs.c.published, runs.c.written_at))}
        tables = run_tables_of(connection, names)
    postgres = partitioned(engine.dialect)
    cutoff = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(seconds=GRACE_SECONDS)
    unpublished = [run for run, (published, written) in states.items()
                   if not published and (postgres or _utc(written) < cutoff)]
    without_row = [run for run in tables if run not in states]  # deleted runs' tables, lost staging tables
    published_staged = [run for run, kinds in tables.items()  # a staging table its run's writer did not drop
                        if "staging" in kinds and states.get(run, (False,))[0]]
    removed, deferred = [], []
    # Tables never attached first: dropping them waits for no reader of the views.
    candidates = [*sorted(unpublished), *sorted(published_staged), *sorted(without_row)]
    for position, run in enumerate(candidates):
        try:
            with database_errors(engine, f"remove run {run} of table {str(names.view)!r}"), \
                    engine.begin() as connection:
                if _remove(connection, names, run):
                    removed.append(run)
        except _LockWait:
            deferred.extend(candidates[position:])
            break
    return Leftovers(found.table, tuple(removed), tuple(deferred))


class _LockWait(Exception):
    """A lock not granted in time inside :func:`_remove` (raised before :func:`database_errors` sees it)."""


def _remove(connection: sa.Connection, names: StorageNames, run: int) -> bool:
    """Remove run ``run``'s leftovers in the caller's transaction if they still are leftovers; whether it did."""
    try:
        bound_lock_waits(connection)
        if partitioned(connection.dialect) and not run_is_abandoned(connection, str(names.view), run):
            return False  # a live run: its writer holds the lock
        runs = runs_clause(names)
        row = connection.execute(sa.select(runs.c.published).where(runs.c.run == run)).first()
        if row is None or not row.published:
            drop_run_rows(connection, names, [run])
            connection.execute(sa.delete(runs).where(runs.c.run == run, runs.c.published == sa.false()))
        _drop_staging(connection, names, run)
        return True
    except sa.exc.DBAPIError as error:
        if is_lock_timeout(error):
            raise _LockWait() from None
        raise


def _drop_staging(connection: sa.Connection, names: StorageNames, run: int) -> None:
    staging = names.staging(run)
    if partitioned(connection.dialect):
        execute_ddl(connection, f"DROP TABLE IF EXISTS {quoted(connection, staging)}")
    else:
        sa.Table(staging.name, sa.MetaData(), schema=staging.schema).drop(connection, checkfirst=True)


def run_tables_of(connection: sa.Connection, names: StorageNames) -> dict[int, set[str]]:
    """Run → kinds of its tables in the storage's schema ("rows": its own table, "staging")."""
    found: dict[int, set[str]] = {}
    for table in sa.inspect(connection).get_table_names(schema=names.view.schema):
        run = names.run_of(table)
        if run is not None:
            found.setdefault(run, set()).add("rows" if table == names.run_rows(run).name else "staging")
    return found


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment



def tidy(engine: sa.Engine, output_table: TableName | StorageNames, log) -> Leftovers | None:
    """:func:`remove_leftovers` after a write, its outcome logged on ``log``; a database error is logged as a
    warning, not raised (the write itself succeeded; a later run tries again). None then."""
    try:
        leftovers = remove_leftovers(engine, output_table)
    except (DatabaseRefusedError, DatabaseUnreachableError) as error:
        log.warning("Could not remove what earlier runs left in table %r (a later run tries again): %s",
                    str(storage_names(output_table).view), error)
        return None
    leftovers.log(log)
    return leftovers
