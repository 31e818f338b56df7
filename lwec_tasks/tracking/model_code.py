"""The code MLflow stores with each consensus model (MLflow "models from code").

MLflow copies this file into the model and runs it when the model is loaded,
so no pickled Python object is stored; the model's state is the ``placement``
artifact (arrays + JSON). Loading needs the ``lwec`` package installed.
"""

from mlflow.models import set_model

from lwec_tasks.tracking.model import PlacementModel

set_model(PlacementModel())
