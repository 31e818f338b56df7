"""The stages hand their results on as values: frozen, each stage's result a new value, the run's facts picklable;
the one change after creation is the table releasing its rows."""

from __future__ import annotations

import dataclasses
import logging
import pickle

import numpy as np
import pytest

from helpers.pipeline import blobs_frame, read_stage
from lwec_tasks.stages.consensus import consensus_labels
from lwec_tasks.stages.ensemble import reliability
from lwec_tasks.stages.evidence import EvidenceSummary, run_evidence
from lwec_tasks.stages.generate import base_clusterings
from lwec_tasks.stages.identities import StableIds
from lwec_tasks.stages.model import labelling_model
from lwec_tasks.tasks.run_facts import RunFacts


def test_stage_results_are_frozen_values_and_the_run_facts_pickle(tmp_path):
    log = logging.getLogger("test")
    table, *_ = read_stage(blobs_frame(n=300, centers=3), tmp_path, n_clusters=3, label_column="target")
    generated = base_clusterings(table, 6, 0, log)
    ensemble, found = reliability(table, generated, 0.4, log)
    assert generated.micro is None and ensemble.micro is not None  # a new value; the stage's input unchanged
    assert ensemble.codes is generated.codes and ensemble.n_microclusters == ensemble.micro.size
    labels = consensus_labels(table, ensemble, found.eci, "lwea", 3, 0.4, 0, log)
    for value, name in ((table, "rows"), (ensemble, "micro"), (ensemble.micro, "size"), (labels, "k"),
                        (found, "eci")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)

    rows = table.rows
    assert table.holds_rows and len(rows) == table.n_partitions
    evidence = run_evidence(table, ensemble, labels, log, 0, "lwea", 0.4)
    assert not table.holds_rows and table.rows is rows and rows == []  # released in place: no handle left

    model = labelling_model(table, ensemble, labels, found.eci, "lwea", 0.4, 3, 0, True, log, evidence=evidence)
    stable = StableIds(np.arange(3, dtype=np.int64))
    facts = RunFacts.of(table.session, table, ensemble, labels, stable, model, {"map.png": b"png"}, evidence)
    again = pickle.loads(pickle.dumps(facts))
    assert again.executor == facts.executor and again.executor.name == "in-process"
    assert (again.n_objects, again.k, again.n_base_clusters) == (300, 3, ensemble.n_clusters_total)
    assert again.evidence.mean_confidence == pytest.approx(evidence.mean_confidence)
    assert again.evidence_metrics()[0] == facts.evidence_metrics()[0]
    assert set(facts.quality) == {"nmi", "ari"}

    bare = RunFacts.of(table.session, table, ensemble, labels, stable, model, {})
    assert isinstance(bare.evidence, EvidenceSummary) and bare.evidence.profiles is None
    assert bare.evidence.mean_confidence is None and bare.evidence_metrics() == ({}, {})
