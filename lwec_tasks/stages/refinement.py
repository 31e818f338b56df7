"""Stage: naive-Bayes steps after the consensus, on a table whose text or boolean columns move the rows.

LWEA and LWGP see the rows through base clusterings of one matrix, where the squared distances weigh the numeric
columns against the text and boolean ones in a fixed ratio. A few reassignment steps of a naive-Bayes model
(:mod:`lwec_tasks.core.naive_bayes`) started from the consensus keep its clusters and weigh each column by what it
tells about them: held out, 0.777 / 0.801 / 0.849 NMI became 0.802 / 0.867 / 0.880 on the structured mixed
tables, the tables without such structure unchanged (docs/decisions.md). Each step is one pass over the
partitions (new labels and their per-cluster sums together), the sums reduced in a fixed order, so both
executors give the same labels. An all-numeric table, or one whose text and boolean columns all got weight 0,
keeps its consensus.
"""

from __future__ import annotations

import dataclasses
import operator
import time
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.naive_bayes import BayesLayout, BayesModel, added_sums
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.consensus import PartitionedLabels, counted_labels
from lwec_tasks.stages.generate import gather_rows
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.sums import standard_scale

#: Reassignment steps after the consensus (chosen on the selection tables: 1 or 3, docs/decisions.md).
BAYES_STEPS = 3


@dataclass(frozen=True, eq=False)
class Refinement:
    """What the naive-Bayes steps did and what placing new rows needs.

    Attributes
    ----------
    model : the :class:`~lwec_tasks.core.naive_bayes.BayesModel` that gave the written labels (fitted on the
        step before's), its clusters numbered as the labels are
    moved : rows whose label each step changed (a step that changes none ends the steps)
    sample_rows : (S, width) the raw (gaps filled) features of the rows at ``positions``
    sample_gaps : (S, q) bool which of their numeric values were imputed
    positions : (S,) sorted table positions of those rows (the cluster map's sample)
    """

    model: BayesModel
    moved: tuple[int, ...]
    sample_rows: np.ndarray
    sample_gaps: np.ndarray
    positions: np.ndarray

    def renumbered(self, ids: np.ndarray, n_ids: int) -> Refinement:
        """The refinement with its model's cluster j renamed ``ids[j]`` among ``n_ids`` ids (stable ids)."""
        return dataclasses.replace(self, model=self.model.renumbered(ids, n_ids))


def refines(table: PartitionedTable) -> bool:
    """Whether a run on ``table`` takes the naive-Bayes steps: a text or boolean column has weight above 0."""
    return table.encoding is not None and bool(table.encoding.weighted_categories) and table.holds_rows


def refined_labels(table: PartitionedTable, labels: PartitionedLabels, sample: np.ndarray, log,
                   steps: int = BAYES_STEPS) -> PartitionedLabels:
    """``labels`` after up to ``steps`` naive-Bayes steps (:mod:`lwec_tasks.core.naive_bayes`), with sizes and
    agreement with the ground truth counted again and the :class:`Refinement` kept; ``sample``: the sorted table
    positions whose features are kept for checking the labelling model. ``labels`` as they are when
    :func:`refines` is false."""
    if not refines(table):
        return labels
    session = table.session
    started = time.perf_counter()
    moments = table.moments
    layout = BayesLayout.of(table.encoding, moments.mean, standard_scale(moments))
    k = len(labels.sizes)
    current = labels.labels
    sums = tree_reduce(session, session.map(part.bayes_sums_partition, table.rows, current, name="bayes-sums",
                                            k=k, layout=layout), added_sums, "bayes-sums-sum").result()
    moved = []
    for step in range(1, steps + 1):
        model = BayesModel.fit(sums, layout)
        stepped = session.map(part.bayes_step_partition, table.rows, current, name="bayes-step", model=model)
        Progress(log, f"naive-Bayes step {step}").wait(stepped, rows=table.counts)
        current = [session.submit(operator.getitem, s, 0, name="bayes-labels") for s in stepped]
        parts = [session.submit(operator.getitem, s, 1, name="bayes-step-sums") for s in stepped]
        changed = session.gather([session.submit(operator.getitem, s, 2, name="bayes-moved") for s in stepped])
        moved.append(int(sum(changed)))
        if moved[-1] == 0 or step == steps:  # the labels are final: the next model's sums are not needed
            break
        sums = tree_reduce(session, parts, added_sums, "bayes-sums-sum").result()
    q = len(layout.numeric)
    sample_rows = _gathered(table, sample, part.feature_rows, "bayes-sample", (0, table.encoding.width))
    sample_gaps = _gathered(table, sample, part.gap_rows, "bayes-sample-gaps", (0, q), q=q)
    seconds = time.perf_counter() - started
    log.info("Naive-Bayes steps after the consensus (text or boolean columns %s move the rows): %d step(s), rows "
             "moved per step %s, in %.2f s", ", ".join(table.encoding.weighted_categories), len(moved),
             ", ".join(f"{m:,}" for m in moved), seconds)
    sizes, quality = counted_labels(table, current, k, log, "After the naive-Bayes steps")
    refinement = Refinement(model, tuple(moved), sample_rows, sample_gaps.astype(bool), sample)
    return dataclasses.replace(labels, labels=current, sizes=sizes, quality=quality, refinement=refinement)


def _gathered(table: PartitionedTable, positions: np.ndarray, take, name: str, empty_shape, **kwargs) -> np.ndarray:
    if len(positions) == 0:
        return np.zeros(empty_shape)
    return np.asarray(gather_rows(table.session, table.rows, positions, table.offsets, take, name, **kwargs).result())
