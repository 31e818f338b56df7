"""What a run writes: the values stored beside every label (:class:`RunMetadata`) and its labels (:class:`LabelRows`).

Standard library only (numpy is named in annotations only). Its own module so that the writer
(:mod:`lwec_tasks.io.staging`), the readers of earlier runs (:mod:`lwec_tasks.io.history`) and the
stages share it while only the writer imports the other: staging → history, never back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, kw_only=True)
class RunMetadata:
    """The values stored beside every label of a run.

    Attributes
    ----------
    run_key : identifies the run; rows of an earlier write with the same key are replaced
    k, method, theta, ensemble_size, seed : the consensus run's parameters
    source_table : the table whose rows were labelled
    flow_run_id : the Prefect flow run that wrote the labels (None outside a flow run)
    held : the run is written held by its quality gate (default False): in the labels view, not in
        ``<labels>_latest`` until promoted (:func:`lwec_tasks.io.history.promote_run`)
    """

    run_key: str
    k: int
    method: str
    theta: float
    ensemble_size: int
    seed: int | None
    source_table: str
    flow_run_id: str | None = None
    held: bool = False

    def column_values(self) -> dict:
        """The labels-table columns other than ``id`` and ``label``, by name, stamped ``written_at`` now.

        Numbers are plain Python ``int`` and ``float`` (sqlite3 would store numpy integers as BLOBs).
        """
        return {
            "run_key": self.run_key,
            "k": int(self.k),
            "method": self.method,
            "theta": float(self.theta),
            "ensemble_size": int(self.ensemble_size),
            "seed": None if self.seed is None else int(self.seed),
            "source_table": self.source_table,
            "flow_run_id": self.flow_run_id,
            "written_at": dt.datetime.now(dt.UTC),
        }


@dataclass(frozen=True, kw_only=True)
class LabelRows(RunMetadata):
    """One run's labels and the metadata stored beside each row.

    Attributes
    ----------
    ids : (N,) object ids (values of the source's id column, or row positions)
    labels : (N,) consensus labels 0..k−1
    run_key, k, method, theta, ensemble_size, seed, source_table, flow_run_id : see :class:`RunMetadata`
    """

    ids: np.ndarray
    labels: np.ndarray
