"""The consensus run as an MLflow model: a DataFrame of feature columns in, cluster ids out.

:class:`PlacementModel` is an ``mlflow.pyfunc.PythonModel`` around a
:class:`~lwec_tasks.core.placement.Placement`, stored as an artifact
(``placement.npz`` + ``placement.json``); the model's code is
``model_code.py`` (MLflow "models from code"), so nothing is pickled.

* :func:`log_placement_model` logs it in the active MLflow run (:func:`active_run_in`) as model ``model``
  (signature: the feature columns as double in, long out; the input example;
  explicit pip requirements) and optionally registers it;
* :func:`load_placement_model` gets the :class:`Placement` back from any model URI
  (``runs:/<run id>/model``, ``models:/<model id>``, ``models:/<name>/<version>``,
  ``models:/<name>@<alias>``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import mlflow
import mlflow.pyfunc
import numpy as np
import pandas as pd

import lwec_tasks
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.label_placement import LabelPlacement, load_placement
from lwec_tasks.core.placement import Placement
from lwec_tasks.core.validation import check_non_empty_text
from lwec_tasks.masking import scrub
from lwec_tasks.tracking.failures import first_line
from lwec_tasks.tracking.fluent import FLUENT_LOCK, using_tracking_uri
from lwec_tasks.tracking.limits import limit_mlflow_requests
from lwec_tasks.tracking.store import mask_uri, resolve_tracking_uri

#: Name (artifact path) of the model in a run.
MODEL_NAME = "model"
#: Key of the placement artifact inside the model.
PLACEMENT_ARTIFACT = "placement"
#: The file MLflow stores with the model and runs to build it at load time.
MODEL_CODE = Path(__file__).with_name("model_code.py")
#: Run tag holding the logged model's URI.
MODEL_URI_TAG = "lwec.model_uri"


class PlacementModel(mlflow.pyfunc.PythonModel):
    """Labels the rows of a DataFrame with the consensus run's cluster ids (int64).

    The :class:`Placement` is read from the model's ``placement`` artifact in
    :meth:`load_context`; :meth:`predict` takes the feature columns by name
    (extra columns are ignored, missing ones raise :class:`LwecInputError`).
    """

    placement: Placement | None = None

    def load_context(self, context):
        self.placement = load_placement(context.artifacts[PLACEMENT_ARTIFACT])

    # The DataFrame hint tells MLflow the input is a DataFrame checked by the signature (no
    # type-hint validation of its own); an unannotated predict draws a warning at every import.
    def predict(self, context, model_input: pd.DataFrame, params=None):
        return predict_frame(self.placement, model_input)


def predict_frame(placement: Placement, frame: pd.DataFrame) -> np.ndarray:
    """``placement.predict`` on the feature columns of ``frame`` (others ignored); (n,) int64 ids.

    Raises :class:`LwecInputError` naming the feature columns ``frame`` lacks. A
    :class:`~lwec_tasks.core.label_placement.LabelPlacement` reads its base columns as labels.
    """
    if isinstance(placement, LabelPlacement):
        return placement.predict_frame(frame)
    if placement.encoding is not None:  # typed columns: encoded with the run's levels and fill values, gaps found
        return placement.predict(frame)
    frame = placement.input_columns(frame)
    values = np.empty((len(frame), len(placement.feature_columns)))
    for j, name in enumerate(placement.feature_columns):
        try:
            values[:, j] = pd.to_numeric(frame[name]).to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as error:
            raise LwecInputError(f"feature column {name!r} is not numeric: {error}") from None
    return placement.predict(values)


def base_column_type(values) -> str:
    """The MLflow column type of a base column whose canonical label values are ``values``: long (integers only),
    double (numbers, one at least not integral: a float label column), else string."""
    if all(isinstance(v, int) for v in values):
        return "long"
    if all(isinstance(v, (int, float)) for v in values):
        return "double"
    return "string"


def model_signature(placement: Placement):
    """Inputs: every feature column as double (base columns: :func:`base_column_type`); output: long (the
    cluster id)."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    if isinstance(placement, LabelPlacement):
        types = [base_column_type(values) for values in placement.base_values]
    elif placement.encoding is not None:
        types = [signature_type(code) for code in placement.encoding.columns]
    else:
        types = ["double"] * len(placement.feature_columns)
    # a model with typed columns takes NULLs (imputed, or the NULL level): its inputs are optional
    optional = {"required": False} if getattr(placement, "encoding", None) is not None else {}
    return ModelSignature(inputs=Schema([ColSpec(kind, name, **optional)
                                         for kind, name in zip(types, placement.feature_columns)]),
                          outputs=Schema([ColSpec("long")]))


def signature_type(code) -> str:
    """The MLflow column type of a typed feature column: double (numeric), boolean, string (text, enum)."""
    if code.kind == "numeric":
        return "double"
    return "boolean" if code.source_kind == "boolean" else "string"


def pip_requirements() -> list[str]:
    """What the model needs to load: this package and the libraries it calls (no inference)."""
    return [
        f"lwec=={lwec_tasks.__version__}",
        f"mlflow=={mlflow.__version__}",
        f"numpy=={np.__version__}",
        f"pandas=={pd.__version__}",
    ]


def prepare_model_logging() -> None:
    """Do now what MLflow's first model log in a process does before it writes anything, so that the log itself is
    quick: read the run context (the command's git information) and map the installed distributions
    (:func:`map_installed_distributions`). Contacts no store."""
    from mlflow.tracking.context.registry import resolve_tags

    resolve_tags()
    map_installed_distributions()


def map_installed_distributions() -> None:
    """Fill MLflow's map of the installed distributions, against which its model log checks the model's
    requirements: a scan of every installed distribution (0.3 s), kept for the process and for the processes
    forked from it (the warm process does it once for every flow run). Contacts no store."""
    from mlflow.utils.requirements_utils import warn_dependency_requirement_mismatches

    # Checking one requirement fills the map; MLflow is installed, so the check itself never warns.
    warn_dependency_requirement_mismatches([f"mlflow=={mlflow.__version__}"])


def model_uri(run_id: str) -> str:
    """The URI of the model logged in run ``run_id``: ``runs:/<run id>/model``."""
    return f"runs:/{run_id}/{MODEL_NAME}"


def example_frame(placement: Placement, rows: np.ndarray | None = None, n_rows: int = 5) -> pd.DataFrame:
    """Up to ``n_rows`` of ``rows`` ((n, d) as clustered; default the centres of the first base clustering)
    in raw feature units (the standardisation undone); for a model on base columns, base labels seen in fitting
    (:meth:`~lwec_tasks.core.label_placement.LabelPlacement.example_frame`)."""
    if isinstance(placement, LabelPlacement):
        return placement.example_frame(n_rows)
    rows = np.array((placement.centres[0] if rows is None else rows)[:n_rows], dtype=np.float64)
    if placement.standardisation is not None:
        rows = rows * placement.standardisation.scale + placement.standardisation.mean
    if placement.encoding is not None:
        return decoded_frame(placement.encoding, rows)
    return pd.DataFrame(rows, columns=list(placement.feature_columns))


def decoded_frame(encoding, rows: np.ndarray) -> pd.DataFrame:
    """Encoded rows (n, width) back as the typed columns: numeric values as they are, each categorical column's
    strongest indicator's level (None for the NULL level)."""
    columns = {}
    for code, start in zip(encoding.columns, encoding.starts):
        if code.kind == "numeric":
            columns[code.name] = rows[:, start].astype(np.float64)
        else:
            picked = np.argmax(rows[:, start:start + code.width], axis=1)
            values = [code.levels[j] for j in picked]
            dtype = object
            columns[code.name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(columns)


def log_placement_model(placement: Placement, input_example: pd.DataFrame | None = None,
                        registered_model_name: str | None = None) -> str:
    """Log ``placement`` in the active MLflow run as model ``model``; return ``runs:/<run id>/model``.

    Call it inside :func:`~lwec_tasks.tracking.fluent.active_run_in` (MLflow's model logging has no client
    form: :mod:`lwec_tasks.tracking.fluent` says why).

    The returned URI and the logged model's ``models:/<model id>`` both resolve.
    ``input_example`` is a DataFrame holding at least the feature columns (others
    are dropped; default :func:`example_frame`). With ``registered_model_name`` a new version of that
    registered model is created. The run gets the tag ``lwec.model_uri``.
    """
    run = mlflow.active_run()
    if run is None:
        raise LwecInputError("log_placement_model needs an active MLflow run (mlflow.start_run())")
    if input_example is None:
        input_example = example_frame(placement)
    example = placement.input_columns(input_example, "input_example").head(5)
    if not isinstance(placement, LabelPlacement) and placement.encoding is not None:
        example = example.astype({code.name: np.float64 for code in placement.encoding.columns
                                  if code.kind == "numeric"})
        for code in placement.encoding.columns:  # a NULL level's example value: the column's first level
            if code.kind != "numeric" and example[code.name].isna().any():
                fallback = next((level for level in code.levels if level is not None), "")
                example[code.name] = example[code.name].where(example[code.name].notna(), fallback)
            if code.kind != "numeric" and code.source_kind == "boolean":
                example[code.name] = example[code.name].astype(bool)
    elif not isinstance(placement, LabelPlacement):
        example = example.astype(np.float64)
    else:  # base labels stay as they are, but a float label column's values as doubles (its signature's type)
        example = example.astype({name: np.float64 for name, values in zip(placement.feature_columns,
                                                                          placement.base_values)
                                  if base_column_type(values) == "double"})
    with tempfile.TemporaryDirectory(prefix="lwec-model-") as scratch:
        stored = placement.save(Path(scratch, PLACEMENT_ARTIFACT))
        with FLUENT_LOCK:
            mlflow.pyfunc.log_model(
                name=MODEL_NAME,
                python_model=str(MODEL_CODE),  # models from code: nothing pickled
                artifacts={PLACEMENT_ARTIFACT: str(stored)},
                signature=model_signature(placement),
                input_example=example,
                pip_requirements=pip_requirements(),
                registered_model_name=registered_model_name,
                metadata={"lwec": {k: v for k, v in placement.metadata().items() if k not in ("state", "encoding")}},
                await_registration_for=0,
            )
    uri = model_uri(run.info.run_id)
    mlflow.MlflowClient(tracking_uri=mlflow.get_tracking_uri()).set_tag(run.info.run_id, MODEL_URI_TAG, uri)
    return uri


def load_placement_model(model_uri: str, tracking_uri: str | None = None) -> Placement:
    """The :class:`Placement` of the MLflow model at ``model_uri``.

    ``tracking_uri`` (default: :func:`~lwec_tasks.tracking.store.resolve_tracking_uri`)
    is the store the URI is resolved in. Raises :class:`LwecInputError` naming the
    URI when it does not resolve to an lwec model.
    """
    tracking_uri = resolve_tracking_uri(tracking_uri)
    limit_mlflow_requests()
    check_non_empty_text("model_uri", model_uri)
    try:
        with using_tracking_uri(tracking_uri):
            loaded = mlflow.pyfunc.load_model(model_uri)
    except Exception as error:  # noqa: BLE001 - every way of not resolving is the same input error
        raise LwecInputError(scrub(
            f"model URI {model_uri!r} does not resolve in the MLflow store at {mask_uri(tracking_uri)}: "
            f"{type(error).__name__}: {first_line(str(error))}",
            tracking_uri,
        )) from None
    try:
        placement = loaded.unwrap_python_model().placement
    except Exception:  # noqa: BLE001 - a pyfunc model that is not ours
        placement = None
    if not isinstance(placement, Placement):
        raise LwecInputError(f"model URI {model_uri!r} is not an lwec consensus model")
    return placement
