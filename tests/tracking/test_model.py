"""The consensus model in a real MLflow store: logged, registered, loaded back."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

from helpers.pipeline import unique
from helpers.placement import build_placement
from helpers.tracking import log_model_run
from lwec_tasks import Ensemble, lwea
from lwec_tasks.core.base_clusterings import fit_base_clusterings
from lwec_tasks.core.eci import eci as cluster_eci
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Standardisation
from lwec_tasks.tracking.fluent import active_run_in
from lwec_tasks.tracking.model import (
    MODEL_URI_TAG,
    load_placement_model,
    log_placement_model,
    predict_frame,
)

COLUMNS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def trained():
    X, _ = make_blobs(240, centers=3, n_features=3, random_state=4)
    scaler = StandardScaler().fit(X)
    base = fit_base_clusterings(scaler.transform(X), 6, random_state=4)
    ensemble = Ensemble(base.labels)
    labels = lwea(ensemble, 3)
    placement = build_placement(Standardisation(scaler.mean_, scaler.scale_), base, ensemble,
                                cluster_eci(ensemble, 0.4), labels, "lwea", 0.4, COLUMNS, seed=4)
    frame = pd.DataFrame(X, columns=COLUMNS)
    return placement, frame


def new_run(store: str) -> str:
    client = MlflowClient(store)
    experiment = client.create_experiment(unique("model"))
    return client.create_run(experiment).info.run_id


def test_round_trip_through_the_store(mlflow_store, trained):
    placement, frame = trained
    run_id = new_run(mlflow_store)
    with active_run_in(mlflow_store, run_id):
        uri = log_placement_model(placement, frame)
    assert uri == f"runs:/{run_id}/model"
    client = MlflowClient(mlflow_store)
    assert client.get_run(run_id).data.tags[MODEL_URI_TAG] == uri
    with_extra = frame.assign(note="x", other=1.0)
    mlflow.set_tracking_uri(mlflow_store)
    try:
        model = mlflow.pyfunc.load_model(uri)
        predicted = np.asarray(model.predict(with_extra))
        assert model.metadata.signature.inputs.input_names() == COLUMNS
        assert [c.type.name for c in model.metadata.signature.inputs.inputs] == ["double"] * 3
        assert model.metadata.signature.outputs.inputs[0].type.name == "long"
        assert model.metadata.saved_input_example_info["type"] == "dataframe"
        logged = client.search_logged_models([client.get_run(run_id).info.experiment_id])
    finally:
        mlflow.set_tracking_uri(None)
    np.testing.assert_array_equal(predicted, placement.predict(frame.to_numpy()))
    assert predicted.dtype == np.int64
    # The logged model's own URI resolves too.
    by_id = load_placement_model(f"models:/{logged[0].model_id}", mlflow_store)
    assert by_id.digest() == placement.digest()
    assert load_placement_model(uri, mlflow_store).digest() == placement.digest()


def test_registered_name_creates_a_version(mlflow_store, trained):
    placement, frame = trained
    name = unique("lwec_model")
    for _ in range(2):
        with active_run_in(mlflow_store, new_run(mlflow_store)):
            log_placement_model(placement, frame, registered_model_name=name)
    versions = MlflowClient(mlflow_store).search_model_versions(f"name='{name}'")
    assert sorted(int(v.version) for v in versions) == [1, 2]
    loaded = load_placement_model(f"models:/{name}/2", mlflow_store)
    np.testing.assert_array_equal(loaded.predict(frame.to_numpy()), placement.predict(frame.to_numpy()))


def test_a_logged_model_reads_back_with_its_uri_tag(mlflow_store, trained):
    placement, frame = trained
    run_id = log_model_run(mlflow_store, unique("model-run"), placement, frame.head(3))
    run = MlflowClient(mlflow_store).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags[MODEL_URI_TAG] == f"runs:/{run_id}/model"
    loaded = load_placement_model(run.data.tags[MODEL_URI_TAG], mlflow_store)
    assert loaded.digest() == placement.digest()


def test_an_unresolvable_uri_names_itself(mlflow_store):
    for uri in ("runs:/0123456789abcdef/model", "models:/no-such-model/3"):
        with pytest.raises(LwecInputError, match=f"model URI '{uri}' does not resolve"):
            load_placement_model(uri, mlflow_store)


@pytest.mark.parametrize("uri", ["", "   ", None, 3])
def test_a_model_uri_that_is_not_text_is_named_before_the_store_is_asked(mlflow_store, uri):
    with pytest.raises(LwecInputError, match=f"model_uri must be a non-empty string, got {uri!r}"):
        load_placement_model(uri, mlflow_store)


def test_missing_feature_columns_are_named(trained):
    placement, frame = trained
    with pytest.raises(LwecInputError, match=r"lacks feature column\(s\) \['b'\]"):
        predict_frame(placement, frame.drop(columns=["b"]))
    reordered = frame[["c", "a", "b"]].assign(extra="text")
    np.testing.assert_array_equal(predict_frame(placement, reordered), placement.predict(frame.to_numpy()))
