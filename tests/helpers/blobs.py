"""The ``blobs`` features table the end-to-end tests run the consensus flow on: writing it, and the flow's
parameters for it."""

from __future__ import annotations

import pandas as pd

from helpers.pipeline import blobs_frame, unique, write_frame

BLOBS_TABLE = "blobs"


def write_blobs_table(url: str, **frame_options) -> pd.DataFrame:
    """Write ``blobs_frame(**frame_options)`` as the table ``blobs`` of the database at ``url``; returns the frame."""
    frame = blobs_frame(**frame_options)
    write_frame(url, BLOBS_TABLE, frame)
    return frame


def blobs_run_parameters(url: str, store: str, experiment_prefix: str, **overrides) -> dict:
    """The consensus flow's parameters for the ``blobs`` table at ``url``: k = 3, scored against ``target``,
    6 base clusterings, seed 3, tracked in ``store`` under a fresh experiment named ``<experiment_prefix>_…``;
    ``overrides`` replace or add parameters."""
    parameters = dict(database_url=url, table=BLOBS_TABLE, n_clusters=3, label_column="target", ensemble_size=6,
                      seed=3, experiment=unique(experiment_prefix), tracking_uri=store)
    parameters.update(overrides)
    return parameters
