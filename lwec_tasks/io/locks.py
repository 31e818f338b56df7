"""Lock waits that never hold readers up, and the lock that marks a run as being written.

PostgreSQL queues lock requests: while a statement waits for a lock that conflicts with one a reader holds
(``DROP TABLE`` behind a dashboard's open transaction, say), every later request that conflicts with it —
any new reader of the same relation — queues behind it. So every transaction of lwec that changes a labels
storage first bounds its own waits (:func:`bound_lock_waits`: ``SET LOCAL lock_timeout``, default
:data:`LOCK_WAIT_SECONDS`) and gives its request up rather than sit in the queue; :func:`is_lock_timeout`
tells that outcome from other errors.

:class:`RunLock` is a session-level advisory lock a live run holds on a connection of its own, from the
moment its unpublished run is added to the runs table until it is published or discarded. The server frees it
when the process dies (its connection ends), so an unpublished run whose lock is free was left by a run that
will never finish (:mod:`lwec_tasks.io.cleanup`). Other databases have no such locks: there a run's age
tells (:data:`~lwec_tasks.io.cleanup.GRACE_SECONDS`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

from lwec_tasks.io.errors import DatabaseRefusedError

#: Longest time (seconds) a statement of lwec waits for a lock on a labels storage before it gives up; below
#: 2 s, since a reader may queue behind the waiting request for that long.
LOCK_WAIT_SECONDS = 1.0

#: SQLSTATE of ``lock_timeout`` expiring (and of ``NOWAIT`` failing): lock_not_available.
LOCK_NOT_AVAILABLE = "55P03"


class LockWaitError(DatabaseRefusedError):
    """A lock on the labels storage was not granted within the wait lwec allows itself; nothing was changed."""


def bound_lock_waits(connection: sa.Connection, seconds: float = LOCK_WAIT_SECONDS) -> None:
    """PostgreSQL: for the rest of the caller's transaction, give up any lock wait after ``seconds``
    (``set_config('lock_timeout', ..., true)``, i.e. ``SET LOCAL``). Elsewhere nothing."""
    if connection.dialect.name == "postgresql":
        connection.execute(sa.select(sa.func.set_config("lock_timeout", f"{max(1, round(seconds * 1000))}ms", True)))


def is_lock_timeout(error: BaseException) -> bool:
    """Whether ``error`` (SQLAlchemy's or the driver's) is a lock wait given up (SQLSTATE 55P03)."""
    original = error.orig if isinstance(error, sa.exc.DBAPIError) and error.orig is not None else error
    return (getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)) == LOCK_NOT_AVAILABLE


def run_lock_key(view: str, run: int) -> tuple[sa.ColumnElement, sa.ColumnElement]:
    """The two-integer advisory lock key of run ``run`` of the labels storage whose view is ``view`` (its
    canonical spelling): ``(hashtext(view), run)`` — apart from the one-integer keys writers serialise on."""
    return sa.func.hashtext(view), sa.cast(int(run), sa.Integer)


class RunLock:
    """The advisory lock a live run holds (PostgreSQL), on a connection of its own, until :meth:`release`.

    Take it with :meth:`acquire` before the transaction that adds the unpublished run commits, so no other
    session ever sees the run without its lock. Elsewhere (SQLite, ...) it holds nothing.
    """

    def __init__(self, engine: sa.Engine, view: str, run: int):
        self.view, self.run = view, int(run)
        self._connection: sa.Connection | None = None
        self._engine = engine

    def acquire(self) -> RunLock:
        """Take the run's lock (a run number is never reused, so it is always free); returns self."""
        if self._engine.dialect.name != "postgresql":
            return self
        connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.execute(sa.select(sa.func.pg_advisory_lock(*run_lock_key(self.view, self.run))))
        except BaseException:
            connection.invalidate()
            connection.close()
            raise
        self._connection = connection
        return self

    def release(self) -> None:
        """Free the lock (idempotent; best effort: on error the connection is dropped, which frees it too)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.execute(sa.select(sa.func.pg_advisory_unlock(*run_lock_key(self.view, self.run))))
        except sa.exc.SQLAlchemyError:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                connection.invalidate()
        finally:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                connection.close()


def run_is_abandoned(connection: sa.Connection, view: str, run: int) -> bool:
    """PostgreSQL: whether no live run holds run ``run``'s lock; if so the caller's transaction now holds it
    (``pg_try_advisory_xact_lock``, freed at its end), so no one can take the run up meanwhile."""
    return bool(connection.execute(sa.select(sa.func.pg_try_advisory_xact_lock(*run_lock_key(view, run))))
                .scalar_one())


@contextlib.contextmanager
def lock_errors(action: str, outcome: str, seconds: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """Raise :class:`LockWaitError` for a lock wait given up inside the block (:func:`is_lock_timeout`), saying
    what could not be done (``action``: "could not publish run key 'k' to table 'labels'") and what that left
    (``outcome``: "nothing was published"). Put it inside :func:`~lwec_tasks.io.errors.database_errors`."""
    try:
        yield
    except sa.exc.DBAPIError as error:
        if not is_lock_timeout(error):
            raise
        raise LockWaitError(
            f"{action}: another database session held a lock it needed for more than {seconds:g} s, and lwec gives "
            f"a lock request up then so that readers never queue behind it; {outcome}. Try again once that "
            "session's transaction has ended (see pg_stat_activity)"
        ) from None
