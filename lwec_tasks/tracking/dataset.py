"""The source table of a consensus run as an MLflow dataset input (context ``training``).

MLflow's UI lists a run's dataset inputs in its Datasets column as
``name (digest)``; the dataset's drawer shows its schema (``mlflow_colspec``)
and profile. A SQL table has no built-in MLflow source type, so the source is
recorded with the type :data:`SOURCE_TYPE` and, as JSON, the database (password
masked, a reference such as ``env:VAR`` kept as given) and the table. Because
MLflow's UI shows the source only for its own types, the profile repeats
database and table next to the row and feature counts.

The digest identifies the source, not its values: the first 8 hex digits of
the SHA-256 of the source type, masked database, table, feature columns (in
order) and number of rows clustered. The same table read the same way gives
the same digest; a changed password does not change it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from lwec_tasks.masking import mask_url

#: Source type recorded for a table in a SQL database.
SOURCE_TYPE = "sql_table"
#: Context tag of the dataset input: the rows the run's clusters (and labelling model) were fitted on.
TRAINING_CONTEXT = "training"
#: MLflow's type name for the feature columns in the schema (features are read as float64).
FEATURE_TYPE = "double"


@dataclass(frozen=True)
class SourceTable:
    """The table a run clustered.

    Attributes
    ----------
    database : the database URL or reference (``env:VAR``, ``block:NAME``); masked when recorded
    table : the table name, schema-qualified when it was given so (``analytics.features``)
    feature_columns : the d feature column names, in the order they were used
    n_rows : rows clustered (after any rows dropped for non-finite features)
    n_rows_read : rows read from the table (default: ``n_rows``)
    """

    database: str
    table: str
    feature_columns: tuple[str, ...]
    n_rows: int
    n_rows_read: int | None = None

    def source(self) -> dict[str, str]:
        """``{"url": masked database, "table": table}``: the dataset's source."""
        return {"url": mask_url(self.database), "table": self.table}

    def profile(self) -> dict:
        """Row and feature counts, database (masked) and table."""
        return {
            "num_rows": int(self.n_rows),
            "num_rows_read": int(self.n_rows if self.n_rows_read is None else self.n_rows_read),
            "num_features": len(self.feature_columns),
            "database": mask_url(self.database),
            "table": self.table,
        }

    def digest(self) -> str:
        """First 8 hex digits of the SHA-256 of source type, masked database, table, columns and row count."""
        identity = {"source_type": SOURCE_TYPE, **self.source(),
                    "feature_columns": [str(name) for name in self.feature_columns], "num_rows": int(self.n_rows)}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]


def dataset_input(table: SourceTable, context: str = TRAINING_CONTEXT):
    """``table`` as an ``mlflow.entities.DatasetInput`` tagged ``mlflow.data.context = context``,
    for ``MlflowClient.log_inputs(run_id, datasets=[...])``.

    The dataset is named after the table; its schema lists the feature columns as
    ``double`` in MLflow's column-spec format (``{"mlflow_colspec": [...]}``).
    """
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.types import ColSpec, Schema
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    schema = Schema([ColSpec(FEATURE_TYPE, str(name)) for name in table.feature_columns])
    dataset = Dataset(name=table.table, digest=table.digest(), source_type=SOURCE_TYPE,
                      source=json.dumps(table.source()), schema=json.dumps({"mlflow_colspec": schema.to_dict()}),
                      profile=json.dumps(table.profile()))
    return DatasetInput(dataset=dataset, tags=[InputTag(key=MLFLOW_DATASET_CONTEXT, value=context)])
