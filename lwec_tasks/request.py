"""The parameters of one consensus run: one model that the flow, the CLI and the deployments share.

Each field carries its default (from the core's constants), its description
(shown in the Prefect UI form, the flow's docstring and ``lwec run --help``)
and exactly one validator. Building a :class:`ConsensusRequest` checks every
parameter before anything runs or is written, raising
:class:`~lwec_tasks.core.errors.LwecInputError` naming the first bad one.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from datetime import UTC, datetime
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from lwec_tasks.core.defaults import AUTO, DEFAULT_ENSEMBLE_SIZE, DEFAULT_THETA, is_auto
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.mixes import (
    DEFAULT_MIX,
    GENERATORS,
    NAMED_MIXES,
    RUN_DEFAULT_MIX,
    RUN_DEFAULT_MIX_LARGE,
    RUN_LARGE_TABLE_ROWS,
    canonical_mix,
    run_default_mix,
)
from lwec_tasks.core.validation import check_integer, check_non_empty_text, check_theta
from lwec_tasks.gate import canonical_gate
from lwec_tasks.io.identifiers import check_new_table_name, default_output_table, latest_view_name
from lwec_tasks.io.limits import DEFAULT_CHUNK_SIZE
from lwec_tasks.io.names import TableName, table_name
from lwec_tasks.methods import PIPELINE_METHODS, describe_pipeline_methods, pipeline_method

_RUN_NAME = re.compile(r"[A-Za-z0-9_.:{}-]{1,64}")
#: Placeholders a run name may hold, filled from the flow run's scheduled start time (UTC).
RUN_NAME_PLACEHOLDERS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%dT%H%M"}
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
#: Fields that do not change the labels, so they are left out of the derived run key.
_NOT_IN_RUN_KEY = frozenset({"database_url", "experiment", "output_table", "run_name", "chunk_size", "tracking_uri",
                             "dask_address", "stable_ids", "keep_runs", "register_model", "promote_if",
                             "model_alias"})
#: Fields left out of the run key at these values, so the keys of runs without them are unchanged (runs before
#: there were generators other than k-means were k-means runs).
_LEFT_OUT_AT_DEFAULT = frozenset({("base_columns", None), ("missing_labels", "error"), ("generators", DEFAULT_MIX)})


def _named(check):
    """A pydantic validator calling ``check(name, value)`` with the field's name."""
    def validate(value, info):
        return check(info.field_name, value)

    return validate


def _must_be(what: str, fits, optional: bool = False):
    """A check raising ``<name> must be <what>, got <value>`` unless ``fits(value)`` (or, if ``optional``, None)."""
    def check(name: str, value):
        if not (optional and value is None) and not fits(value):
            raise LwecInputError(f"{name} must be {what}, got {value!r}")
        return value

    return check


non_empty_text = check_non_empty_text
optional_column = _must_be("a column name or None", lambda value: isinstance(value, str) and value, optional=True)
_optional_model_name = _must_be("a registered model name or None",
                                lambda value: isinstance(value, str) and value.strip(), optional=True)
_flag = _must_be("true or false", lambda value: isinstance(value, bool))


def _table(name: str, value):
    """A table name in its canonical spelling (``schema.table``; see :mod:`lwec_tasks.io.names`)."""
    return str(table_name(name, value))


def _columns(name: str, value):
    if value is None:
        return None
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise LwecInputError(f"{name} must be a list of column names, got {value!r}")
    value = tuple(value)
    bad = [c for c in value if not isinstance(c, str) or not c]
    if bad:
        raise LwecInputError(f"{name} must be column names, got {bad}")
    return value


def _integer(minimum: int, optional: bool = False):
    def check(name: str, value):
        return None if optional and value is None else check_integer(name, value, minimum)

    return check


def _n_clusters(name: str, value):
    if is_auto(value):
        return AUTO
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, str):
        raise LwecInputError(f"{name} must be an integer >= 2 or 'auto', got {value!r}")
    return check_integer(name, value, 2)


def _method(name: str, value):
    return pipeline_method(value).key


def _generators(name: str, value):
    return None if value is None else canonical_mix(value)


def _theta(name: str, value):
    return check_theta(value)


def _output_table(name: str, value):
    return None if value is None else str(check_new_table_name(value, name))


def _run_name(name: str, value):
    if value is None:
        return None
    if not isinstance(value, str) or not _RUN_NAME.fullmatch(value) or _PLACEHOLDER.sub("", value).count("{") \
            or _PLACEHOLDER.sub("", value).count("}"):
        raise LwecInputError(f"{name}={value!r}: use 1–64 letters, digits or . _ : - characters, and "
                             f"placeholders {', '.join('{' + p + '}' for p in RUN_NAME_PLACEHOLDERS)}")
    unknown = [p for p in _PLACEHOLDER.findall(value) if p not in RUN_NAME_PLACEHOLDERS]
    if unknown:
        raise LwecInputError(f"{name}={value!r}: unknown placeholder {{{unknown[0]}}}; known: "
                             f"{', '.join('{' + p + '}' for p in RUN_NAME_PLACEHOLDERS)}")
    return value


def _promote_if(name: str, value):
    return canonical_gate(value)


#: MLflow alias rules: letters, digits, ``_`` and ``-``; not ``latest``, not a version (``v1``).
_ALIAS = re.compile(r"[A-Za-z0-9_-]{1,255}")


def _model_alias(name: str, value):
    if not isinstance(value, str) or not _ALIAS.fullmatch(value) or value.lower() == "latest" \
            or re.fullmatch(r"[vV]\d+", value):
        raise LwecInputError(f"{name}={value!r}: use letters, digits, _ and - (not 'latest', not a version such "
                             "as v2)")
    return value


# An address is one word: not empty, no whitespace.
optional_address = _must_be("a scheduler address such as tcp://10.0.0.5:8786, or None",
                            lambda value: isinstance(value, str) and value.split() == [value], optional=True)
_missing_labels = _must_be("'error' or 'own_cluster'", lambda value: value in ("error", "own_cluster"))


def _checked(check):
    return BeforeValidator(_named(check))


class ConsensusRequest(BaseModel):
    """What a consensus run is asked to do: the flow's parameters, checked.

    Shapes: ``feature_columns`` is a tuple of column names (a list is accepted).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: Annotated[str, _checked(non_empty_text), Field(
        description="SQLAlchemy URL of the database holding the table, e.g. sqlite:///features.db or "
                    "postgresql+psycopg://user:password@host/db; 'env:VAR' reads it from environment variable "
                    "VAR, 'block:NAME' from a prefect-sqlalchemy SqlAlchemyConnector block, 'secret:NAME' from a "
                    "Prefect Secret block")]
    table: Annotated[str, _checked(_table), Field(
        description="Table (or view) with one row per object: table or schema.table; a name containing a dot "
                    'in double quotes: "my.table" or analytics."my.table"')]
    n_clusters: Annotated[int | Literal["auto"], _checked(_n_clusters), Field(
        description="Number of consensus clusters k: an integer of at least 2, or auto to choose k from the "
                    "ensemble (see docs/pipeline.md, Automatic k)")]
    feature_columns: Annotated[tuple[str, ...] | None, _checked(_columns), Field(
        description="Feature columns; default: every numeric column except the id and label columns")] = None
    id_column: Annotated[str | None, _checked(optional_column), Field(
        description="Column identifying each row; default: the primary key, else a column named 'id', "
                    "else the row position after sorting the rows by all columns read")] = None
    label_column: Annotated[str | None, _checked(optional_column), Field(
        description="Ground-truth column (optional): it is not clustered on, and enables NMI and ARI")] = None
    method: Annotated[str, _checked(_method), Field(description=describe_pipeline_methods())] = PIPELINE_METHODS[0]
    ensemble_size: Annotated[int, _checked(_integer(1)), Field(
        description="Number of base clusterings M in the ensemble, made by the generators")] = DEFAULT_ENSEMBLE_SIZE
    generators: Annotated[str | None, _checked(_generators), Field(
        description=f"Generators of the base clusterings: {DEFAULT_MIX} (the paper's protocol), a named mix "
                    f"({', '.join(NAMED_MIXES)}) or weights such as kmeans:4,genie:3,spectral:3; generators: "
                    f"{', '.join(GENERATORS)}. Default by the table's size: {RUN_DEFAULT_MIX} up to "
                    f"{RUN_LARGE_TABLE_ROWS:,} rows, {RUN_DEFAULT_MIX_LARGE} above; the run records the mix "
                    "used (see docs/generators.md)")] = None
    theta: Annotated[float, _checked(_theta), Field(
        description="ECI parameter θ > 0 (the paper uses 0.4)")] = DEFAULT_THETA
    seed: Annotated[int | None, _checked(_integer(0, optional=True)), Field(
        description="Random seed, an integer of at least 0; None (CLI: --seed none) draws a fresh "
                    "random seed for each run")] = 0
    experiment: Annotated[str, _checked(non_empty_text), Field(description="MLflow experiment name")] = "lwec"
    output_table: Annotated[str | None, _checked(_output_table), Field(
        description="Labels table to create or update (table or schema.table); default the source table's "
                    "name followed by _lwec_labels, in the source table's schema")] = None
    standardize: Annotated[bool, _checked(_flag), Field(
        description="Standardise each feature to mean 0, variance 1")] = True
    drop_nonfinite: Annotated[bool, _checked(_flag), Field(
        description="Drop rows with missing/NaN/infinite features instead of failing")] = False
    run_name: Annotated[str | None, _checked(_run_name), Field(
        description="Labels run key: the key under which this run's rows are stored in the labels table (not "
                    "the name of the Prefect flow run, which is <table>-k<k>-<method>); default derived from the "
                    "inputs, so that a rerun replaces its rows. {date} and {datetime} are replaced by the run's "
                    "scheduled start (UTC), so that scheduled runs keep one set of rows per night")] = None
    stable_ids: Annotated[bool, _checked(_flag), Field(
        description="Renumber the cluster ids to agree as far as possible with the latest earlier run of the "
                    "same source table in the labels table (clusters without a partner get fresh ids)")] = True
    keep_runs: Annotated[int | None, _checked(_integer(1, optional=True)), Field(
        description="Keep the labels of this many most recent runs per source table in the labels table and "
                    "delete older runs; None keeps every run")] = 30
    register_model: Annotated[str | None, _checked(_optional_model_name), Field(
        description="Register the run's labelling model in the MLflow Model Registry under this name")] = None
    promote_if: Annotated[str | None, _checked(_promote_if), Field(
        description="Quality gate: conditions over the run's MLflow metrics, e.g. "
                    "'confidence_mean>=0.8,pac<=0.1' (operators >=, <=, >, <, ==). When all hold, the run's labels "
                    "become <labels>_latest and its registered model version gets model_alias; when one fails the "
                    "run is held (labels kept under its run key, nothing promoted) and ends Failed. Empty: every "
                    "run is promoted (see docs/pipeline.md)")] = None
    model_alias: Annotated[str, _checked(_model_alias), Field(
        description="MLflow alias given to the registered model version of a promoted run (with "
                    "register_model)")] = "champion"
    tracking_uri: Annotated[str | None, Field(
        description="MLflow tracking URI; default $MLFLOW_TRACKING_URI, else mlflow.db (SQLite) in the working "
                    "directory; "
                    "'env:VAR' reads it from environment variable VAR")] = None
    chunk_size: Annotated[int, _checked(_integer(1)), Field(
        description="Rows read per database round trip")] = DEFAULT_CHUNK_SIZE
    dask_address: Annotated[str | None, _checked(optional_address), Field(
        description="Address of an existing Dask scheduler, e.g. tcp://10.0.0.5:8786; the stages then run on "
                    "its workers (default: in this process, a thread per core)")] = None

    base_columns: Annotated[tuple[str, ...] | None, _checked(_columns), Field(
        description="Label columns of the table that are the M base clusterings (integer or text labels, any "
                    "coding): no base clusterings are generated and no feature columns are read; ensemble_size "
                    "is then the number of these columns (a given value is ignored)")] = None
    missing_labels: Annotated[Literal["error", "own_cluster"], _checked(_missing_labels), Field(
        description="With base_columns, a NULL label: 'error' refuses the table (naming each column and its "
                    "NULLs), 'own_cluster' gives each missing label a cluster of its own in its base "
                    "clustering")] = "error"

    @model_validator(mode="before")
    @classmethod
    def _base_columns_are_the_ensemble(cls, data: Any) -> Any:
        """The parameters with ``ensemble_size`` set to the number of ``base_columns`` (when given); refuses
        ``feature_columns`` and ``base_columns`` together."""
        if not isinstance(data, dict) or data.get("base_columns") is None:
            return data
        if data.get("feature_columns") is not None:
            raise LwecInputError("feature_columns and base_columns were both given: base_columns are the base "
                                 "clusterings and no features are read, so pass one of them")
        columns = _columns("base_columns", data["base_columns"])
        if not columns:
            raise LwecInputError("base_columns is empty; name at least one label column or leave it unset")
        return {**data, "ensemble_size": len(columns)}

    @model_validator(mode="after")
    def _latest_view_name_fits(self) -> ConsensusRequest:
        latest_view_name(self.output_name)  # the view beside the labels table must be nameable
        return self

    @model_validator(mode="after")
    def _one_process_writes_a_duckdb_file(self) -> ConsensusRequest:
        from lwec_tasks.io.duckdb_dialect import refuse_other_processes

        refuse_other_processes(self.database_url, self.dask_address)  # a URL given as such; references: on reading
        return self

    def __init__(self, **parameters: Any):
        try:
            super().__init__(**parameters)
        except ValidationError as error:
            raise LwecInputError(_first_problem(error)) from None

    # cached_property writes the instance's __dict__ directly, which a frozen model allows; pydantic leaves such
    # values out of equality, hashing and dumps.
    @cached_property
    def source_name(self) -> TableName:
        """``table`` as a :class:`~lwec_tasks.io.names.TableName` (read once)."""
        return table_name("table", self.table)

    @cached_property
    def output_name(self) -> TableName:
        """The :class:`~lwec_tasks.io.names.TableName` of ``output_table``, or of ``<table>_lwec_labels`` (read
        once)."""
        if self.output_table is None:
            return default_output_table(self.source_name)
        return check_new_table_name(self.output_table)

    @property
    def resolved_output_table(self) -> str:
        """``output_table``, or ``<table>_lwec_labels``: :attr:`output_name` in its canonical spelling."""
        return self.output_table if self.output_table is not None else str(default_output_table(self.source_name))

    @property
    def gate(self) -> tuple:
        """The :class:`~lwec_tasks.gate.Condition` tuple of ``promote_if``; empty without a gate."""
        from lwec_tasks.gate import parse_gate

        return () if self.promote_if is None else parse_gate(self.promote_if)

    @property
    def auto_k(self) -> bool:
        """Whether k is chosen from the ensemble (``n_clusters="auto"``)."""
        return self.n_clusters == AUTO

    def scheduled_at(self, start: datetime) -> ConsensusRequest:
        """This request with the ``{date}``/``{datetime}`` placeholders of ``run_name`` filled from ``start``."""
        if self.run_name is None or "{" not in self.run_name:
            return self
        when = start.astimezone(UTC) if start.tzinfo else start
        name = _PLACEHOLDER.sub(lambda m: when.strftime(RUN_NAME_PLACEHOLDERS[m.group(1)]), self.run_name)
        return self.model_copy(update={"run_name": name})

    def for_rows(self, n_rows: int, weighted_categories: bool = False) -> ConsensusRequest:
        """This request with ``generators`` filled in when none was given: the default mix for a table of
        ``n_rows`` rows, with or without ``weighted_categories`` (text or boolean columns that move the rows;
        :func:`~lwec_tasks.core.mixes.run_default_mix`; with ``base_columns``, which generate nothing,
        :data:`~lwec_tasks.core.mixes.RUN_DEFAULT_MIX`, so their run keys stay as they were). The flow calls it once
        the table is read, so that the run key and the run's parameters record the mix used."""
        if self.generators is not None:
            return self
        mix = RUN_DEFAULT_MIX if self.base_columns is not None else run_default_mix(n_rows, weighted_categories)
        return self.model_copy(update={"generators": mix})

    @property
    def run_key(self) -> str:
        """Key of this run's rows in the labels table.

        ``run_name`` when given (placeholders filled by :meth:`scheduled_at`);
        otherwise derived from the inputs that decide the labels, so rerunning
        the same request replaces the same rows. Before :meth:`for_rows`, a request given no mix is keyed as
        on a table of at most ``RUN_LARGE_TABLE_ROWS`` rows.
        """
        if self.run_name is not None:
            return self.run_name
        parameters = self.model_dump()
        parameters["generators"] = parameters["generators"] or RUN_DEFAULT_MIX
        deciding = {k: v for k, v in parameters.items() if k not in _NOT_IN_RUN_KEY
                    and (k, v) not in _LEFT_OUT_AT_DEFAULT}
        digest = hashlib.sha256(json.dumps(deciding, sort_keys=True, default=list).encode()).hexdigest()
        return f"{self.method}-k{self.n_clusters}-{digest[:12]}"


def _first_problem(error: ValidationError) -> str:
    """The message of the first failed check: ours as raised, pydantic's prefixed with the field."""
    first = error.errors()[0]
    raised = (first.get("ctx") or {}).get("error")
    if isinstance(raised, LwecInputError):
        return str(raised)
    where = ".".join(str(part) for part in first.get("loc", ())) or "parameters"
    if first.get("type") == "extra_forbidden":
        return f"unknown parameter {where!r}; known parameters: {', '.join(ConsensusRequest.model_fields)}"
    return f"{where}: {first.get('msg')}, got {first.get('input')!r}"


def document_parameters(model: type[BaseModel]):
    """Decorator: append a Google-style ``Args:`` section with ``model``'s field descriptions.

    Prefect reads the descriptions for its UI form from that section, so apply
    it below ``@flow``. Every parameter of the function must be a field of ``model``.
    """
    descriptions = {name: field.description for name, field in model.model_fields.items()}

    def decorate(function):
        names = list(inspect.signature(function).parameters)
        missing = [name for name in names if not descriptions.get(name)]
        if missing:
            raise TypeError(f"{function.__name__}: no description for parameter(s) {missing}")
        lines = [f"    {name}: {descriptions[name]}" for name in names]
        function.__doc__ = inspect.cleandoc(function.__doc__ or "") + "\n\nArgs:\n" + "\n".join(lines) + "\n"
        return function

    return decorate
