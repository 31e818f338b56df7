"""Database edges of the pipeline: reading feature tables, writing label tables.

Everything here uses SQLAlchemy 2 Core; identifiers are always taken from
reflection or validated, never pasted into SQL text.
"""

from lwec_tasks.io.connection import DatabaseUnreachableError, mask_url, open_engine, url_has_credentials
from lwec_tasks.io.history import (
    EarlierRun,
    ensure_latest_view,
    latest_earlier_run,
    latest_labels_query,
    latest_view_name,
    prune_runs,
)
from lwec_tasks.io.identifiers import check_new_table_name, default_output_table
from lwec_tasks.io.sink import LABEL_TABLE_COLUMNS, LabelRows, check_label_table, id_key_type, write_labels
from lwec_tasks.io.source import SourceTable, describe_source, read_rows

__all__ = [
    "LABEL_TABLE_COLUMNS",
    "DatabaseUnreachableError",
    "EarlierRun",
    "LabelRows",
    "SourceTable",
    "check_label_table",
    "check_new_table_name",
    "default_output_table",
    "describe_source",
    "ensure_latest_view",
    "id_key_type",
    "latest_earlier_run",
    "latest_labels_query",
    "latest_view_name",
    "mask_url",
    "url_has_credentials",
    "open_engine",
    "prune_runs",
    "read_rows",
    "write_labels",
]
