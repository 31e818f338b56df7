"""The parameters of one consensus run, checked before anything runs or is written."""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
from dataclasses import asdict, dataclass
from typing import Literal

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.source import DEFAULT_CHUNK_SIZE
from lwec_tasks.io.identifiers import check_new_table_name, default_output_table

METHODS = ("lwea", "lwgp")
Method = Literal["lwea", "lwgp"]
_RUN_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

#: What each parameter of a consensus run means; the Prefect UI form, the flow's
#: docstring and the CLI help all show these.
PARAMETER_DESCRIPTIONS: dict[str, str] = {
    "database_url": "SQLAlchemy URL of the database holding the table, e.g. sqlite:///features.db or "
                    "postgresql+psycopg://user:password@host/db; 'env:VAR' reads it from environment variable VAR",
    "table": "Table (or view) with one row per object",
    "n_clusters": "Number of consensus clusters k (at least 2)",
    "feature_columns": "Feature columns; default: every numeric column except the id and label columns",
    "id_column": "Column identifying each row; default: the primary key, else a column named 'id', "
                 "else the row position after sorting the rows by all columns read",
    "label_column": "Ground-truth column (optional): it is not clustered on, and enables NMI and ARI",
    "method": "lwea: average link on the locally weighted co-association matrix; "
              "lwgp: Tcut on the locally weighted bipartite graph",
    "ensemble_size": "Number of k-means base clusterings M",
    "theta": "ECI parameter θ > 0 (the paper's default is 0.4)",
    "seed": "Random seed; empty for a fresh random run",
    "experiment": "MLflow experiment name",
    "output_table": "Labels table to create or update; default <table>_lwec_labels",
    "standardize": "Standardise each feature to mean 0, variance 1",
    "drop_nonfinite": "Drop rows with missing/NaN/infinite features instead of failing",
    "run_name": "Key of this run's rows in the labels table; default derived from the inputs",
    "tracking_uri": "MLflow tracking URI; default $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db; "
                    "'env:VAR' reads it from environment variable VAR",
    "chunk_size": "Rows read per database round trip",
}


def document_parameters(descriptions: dict[str, str]):
    """Decorator: append a Google-style ``Args:`` section built from ``descriptions`` to a function's docstring.

    Prefect reads parameter descriptions for its UI form from that section, so
    apply it below ``@flow``. Every parameter of the function must be described.
    """
    def decorate(function):
        import inspect

        names = list(inspect.signature(function).parameters)
        missing = [name for name in names if name not in descriptions]
        if missing:
            raise TypeError(f"{function.__name__}: no description for parameter(s) {missing}")
        lines = [f"    {name}: {descriptions[name]}" for name in names]
        function.__doc__ = inspect.cleandoc(function.__doc__ or "") + "\n\nArgs:\n" + "\n".join(lines) + "\n"
        return function

    return decorate


@dataclass(frozen=True)
class ConsensusRequest:
    """What a consensus flow run was asked to do (the flow's parameters).

    See :func:`flows.consensus.consensus_flow` for the meaning of each field.
    """

    database_url: str
    table: str
    n_clusters: int
    feature_columns: tuple[str, ...] | None = None
    id_column: str | None = None
    label_column: str | None = None
    method: str = "lwea"
    ensemble_size: int = 10
    theta: float = 0.4
    seed: int | None = 0
    experiment: str = "lwec"
    output_table: str | None = None
    standardize: bool = True
    drop_nonfinite: bool = False
    run_name: str | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE

    def __post_init__(self):
        if self.feature_columns is not None and not isinstance(self.feature_columns, tuple):
            object.__setattr__(self, "feature_columns", tuple(self.feature_columns))
        self.validate()

    def validate(self) -> None:
        """Raise :class:`LwecInputError` naming the first unusable parameter."""
        for name in ("database_url", "table", "experiment"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise LwecInputError(f"{name} must be a non-empty string, got {value!r}")
        if self.method not in METHODS:
            raise LwecInputError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        _check_int(self.n_clusters, "n_clusters", minimum=2)
        _check_int(self.ensemble_size, "ensemble_size", minimum=1)
        _check_int(self.chunk_size, "chunk_size", minimum=1)
        if self.seed is not None:
            _check_int(self.seed, "seed", minimum=0)
        if isinstance(self.theta, bool) or not isinstance(self.theta, numbers.Real) \
                or not math.isfinite(self.theta) or self.theta <= 0:
            raise LwecInputError(f"theta must be a finite number > 0, got {self.theta!r}")
        for name in ("id_column", "label_column"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise LwecInputError(f"{name} must be a column name or None, got {value!r}")
        if self.feature_columns is not None:
            bad = [c for c in self.feature_columns if not isinstance(c, str) or not c]
            if bad:
                raise LwecInputError(f"feature_columns must be column names, got {bad}")
        if self.output_table is not None:
            check_new_table_name(self.output_table)
        if self.run_name is not None and not _RUN_NAME.fullmatch(self.run_name):
            raise LwecInputError(
                f"run_name={self.run_name!r}: use 1–64 letters, digits or . _ : - characters"
            )

    @property
    def resolved_output_table(self) -> str:
        """``output_table``, or ``<table>_lwec_labels``."""
        return self.output_table or default_output_table(self.table)

    @property
    def run_key(self) -> str:
        """Key of this run's rows in the labels table.

        ``run_name`` when given; otherwise derived from the inputs that decide the
        labels, so rerunning the same request replaces the same rows.
        """
        if self.run_name is not None:
            return self.run_name
        deciding = {k: v for k, v in asdict(self).items()
                    if k not in ("database_url", "experiment", "output_table", "run_name", "chunk_size")}
        digest = hashlib.sha256(json.dumps(deciding, sort_keys=True, default=list).encode()).hexdigest()
        return f"{self.method}-k{self.n_clusters}-{digest[:12]}"


def _check_int(value, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LwecInputError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise LwecInputError(f"{name} must be >= {minimum}, got {value}")
