"""A table of numeric, text and boolean columns with NULLs: the same encoding, imputation, labels and model
in-process and on a Dask cluster (partitions cut small, so every reduction crosses partitions)."""

from __future__ import annotations

import numpy as np
import pytest

from flows.consensus import consensus_flow
from helpers.mixed import mixed_frame, write_mixed
from helpers.pipeline import read_labels, unique

pytestmark = pytest.mark.slow


def test_a_mixed_table_gets_the_same_labels_on_either_executor(prefect_server, mlflow_store, sqlite_url,
                                                              dask_scheduler, monkeypatch):
    import lwec_tasks.stages.planning as planning
    from lwec_tasks.tracking.model import load_placement_model

    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 40)
    monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "50")
    write_mixed(sqlite_url, "mixed", mixed_frame())
    results = {}
    for executor in (None, dask_scheduler):
        summary = consensus_flow(database_url=sqlite_url, table="mixed", n_clusters=3, ensemble_size=6, seed=3,
                                 experiment=unique("mixed-executors"), tracking_uri=mlflow_store,
                                 dask_address=executor, run_name=f"on-{'dask' if executor else 'in-process'}",
                                 stable_ids=False)
        stored = read_labels(sqlite_url, summary["output_table"], summary["run_key"]).sort_values("id")
        results[executor is None] = (stored, load_placement_model(summary["model_uri"], mlflow_store), summary)
    (local, local_model, local_summary), (dask, dask_model, dask_summary) = results[True], results[False]
    assert len(local) == 150
    np.testing.assert_array_equal(local["label"].to_numpy(), dask["label"].to_numpy())
    np.testing.assert_allclose(local["confidence"].to_numpy(), dask["confidence"].to_numpy(), rtol=1e-6)
    assert local_model.encoding.to_json() == dask_model.encoding.to_json()
    assert local_summary["imputed_values"] == dask_summary["imputed_values"]
