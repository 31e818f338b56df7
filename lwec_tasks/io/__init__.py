"""Database edges of the pipeline: reading feature tables, writing label tables.

Everything here uses SQLAlchemy 2 Core; identifiers are always taken from
reflection or validated, never pasted into SQL text. Table names may carry a
schema (``analytics.features``, see :mod:`lwec_tasks.io.names`).

The names below are loaded on first use, so that importing one light module
(``lwec_tasks.io.catalog``, used by the preflight checks) does not load the
bulk readers and writers (numpy, pandas, pyarrow, numba).
"""

from lwec_tasks import lazy_attributes
from lwec_tasks.io import duckdb_dialect

# duckdb:// URLs get lwec's fix of duckdb-engine's column reflection (imports nothing of duckdb until one is opened).
duckdb_dialect.register()

#: Public name → module defining it (in this package).
_EXPORTS = {
    "DatabaseRefusedError": "errors",
    "DatabaseUnreachableError": "errors",
    "mask_url": "connection",
    "open_engine": "connection",
    "url_has_credentials": "connection",
    "ensure_latest_view": "history",
    "latest_labels_query": "history",
    "prune_runs": "history",
    "record_mlflow_run": "history",
    "promote_run": "history",
    "check_new_table_name": "identifiers",
    "default_output_table": "identifiers",
    "latest_view_name": "identifiers",
    "TableName": "names",
    "parse_table_name": "names",
    "table_name": "names",
    "LABEL_TABLE_COLUMNS": "catalog",
    "SourceTable": "catalog",
    "check_label_table": "catalog",
    "describe_source": "catalog",
    "LabelRows": "run_metadata",
    "id_key_type": "staging",
    "write_labels": "staging",
    "read_rows": "source",
}

__getattr__, __dir__ = lazy_attributes(__name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()})
__all__ = sorted(_EXPORTS)
