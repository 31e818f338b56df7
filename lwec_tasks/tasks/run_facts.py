"""The facts of a finished consensus run that its MLflow run and summary report, as one picklable value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from lwec_tasks.core.k_criterion import SELECTION_SAMPLE
from lwec_tasks.stages.evidence import EvidenceSummary

if TYPE_CHECKING:
    from lwec_tasks.core.encoding import TableEncoding
    from lwec_tasks.core.k_criterion import KSelection
    from lwec_tasks.core.placement import Placement
    from lwec_tasks.executors import Executor
    from lwec_tasks.io.columns import ColumnPlan
    from lwec_tasks.stages.consensus import PartitionedLabels
    from lwec_tasks.stages.evidence import RunEvidence
    from lwec_tasks.stages.generate import PartitionedEnsemble
    from lwec_tasks.stages.identities import StableIds
    from lwec_tasks.stages.read import PartitionedTable

#: Rows of the model's input example (raw feature values of sampled training rows).
INPUT_EXAMPLE_ROWS = 5


@dataclass(frozen=True)
class ExecutorFacts:
    """Where the stages ran: ``name`` ("in-process" or "dask"), ``scheduler`` the Dask scheduler's address (None
    in-process), ``n_workers`` and ``n_threads``."""

    name: str
    scheduler: str | None
    n_workers: int
    n_threads: int

    @classmethod
    def of(cls, executor: Executor) -> ExecutorFacts:
        return cls(executor.name, executor.address, executor.n_workers, executor.n_threads)


@dataclass(frozen=True, eq=False)
class RunFacts:
    """The small facts of a finished run that the MLflow run and the summary report, built from the stage results
    by :meth:`of`. Picklable: it holds no executor and no per-row handles.

    Attributes
    ----------
    executor : where the stages ran
    plan : the columns read: id column, feature columns, every column not clustered on with the reason
    encoding : the typed features' encoding (None: base columns)
    imputed_counts : values imputed per numeric column (numeric gaps)
    n_partitions : partitions the table was read in
    n_objects, n_rows_read, n_rows_dropped : rows kept, read, dropped
    clusters : one row per base cluster: ``cluster``, ``base_clustering``, ``base_label``, ``size``
    n_microclusters : Ñ, the distinct label rows (None when not found)
    sample_rows : (S, d) the cluster map's rows (S ≤ 2,000, as clustered), whose first rows are the model's
        input example
    k : the number of clusters asked for (chosen, for "auto")
    selection : the automatic choice of k (None when k was given)
    sizes : (k,) rows per written cluster id
    quality : NMI/ARI against the ground truth, or empty
    stable : the ids written and the earlier run they agree with
    placement : the labelling model
    model_given_back : the share of the sampled rows the labelling model gives their written label
    figures : artifact name → PNG bytes of the run's figures (:func:`~lwec_tasks.tasks.track.draw_figures`)
    evidence : the row confidences' summary, cluster profiles and co-association's distribution
        (``EvidenceSummary()`` for a run without evidence)
    system_series : the run's CPU and memory samples
        (:meth:`~lwec_tasks.tracking.system_metrics.SystemSampler.series`; default empty)
    bayes_moved : rows each naive-Bayes step after the consensus moved (:mod:`lwec_tasks.stages.refinement`);
        default empty (no steps taken)
    """

    executor: ExecutorFacts
    plan: ColumnPlan
    encoding: TableEncoding | None
    imputed_counts: dict[str, int]
    n_partitions: int
    n_objects: int
    n_rows_read: int
    n_rows_dropped: int
    clusters: pd.DataFrame
    n_microclusters: int | None
    sample_rows: np.ndarray
    k: int
    selection: KSelection | None
    sizes: np.ndarray
    quality: dict[str, float]
    stable: StableIds
    placement: Placement
    model_given_back: float
    figures: dict[str, bytes]
    evidence: EvidenceSummary = field(default_factory=EvidenceSummary)
    system_series: dict = field(default_factory=dict)
    bayes_moved: tuple[int, ...] = ()

    @classmethod
    def of(cls, executor: Executor, table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels,
           stable: StableIds, model: tuple[Placement, float], figures: dict[str, bytes],
           evidence: RunEvidence | None = None, system_series: dict | None = None) -> RunFacts:
        """The facts of a run from its stage results; ``model`` is (the labelling model, the share it gives back)."""
        placement, given_back = model
        clusters = pd.DataFrame({
            "cluster": np.arange(ensemble.n_clusters_total), "base_clustering": ensemble.cluster_column,
            "base_label": ensemble.cluster_label, "size": ensemble.cluster_sizes,
        })
        return cls(
            executor=ExecutorFacts.of(executor), plan=table.plan, encoding=table.encoding,
            imputed_counts=dict(table.imputed_counts), n_partitions=table.n_partitions, n_objects=table.n_rows,
            n_rows_read=table.n_read, n_rows_dropped=table.n_dropped, clusters=clusters,
            n_microclusters=ensemble.n_microclusters, sample_rows=ensemble.sample_rows, k=labels.k,
            selection=labels.selection, sizes=labels.sizes, quality=labels.quality, stable=stable,
            placement=placement, model_given_back=given_back, figures=figures,
            evidence=evidence.summary() if evidence is not None else EvidenceSummary(),
            system_series=dict(system_series or {}),
            bayes_moved=labels.refinement.moved if labels.refinement is not None else ())

    @property
    def id_column(self) -> str | None:
        return self.plan.id_column

    @property
    def feature_columns(self) -> tuple[str, ...]:
        return self.plan.feature_columns

    @property
    def left_out(self) -> tuple[tuple[str, str], ...]:
        """(column, reason) of every column not clustered on."""
        return tuple(self.plan.left_out)

    @property
    def categorical(self) -> dict[str, dict]:
        """Each text or boolean feature column → {kind, levels (how many), null_rows, relevance, null_relevance
        (None without NULLs), nulls: "imputed" (missing at random: unknown, counted as imputed), "a level" or
        None (no NULL)}."""
        if self.encoding is None:
            return {}
        out = {}
        for code in self.encoding.columns:
            if code.kind != "category":
                continue
            nulls = code.null_rows
            out[code.name] = {"kind": code.source_kind, "levels": len(code.levels), "null_rows": nulls,
                              "relevance": code.relevance, "null_relevance": code.null_relevance,
                              "nulls": None if not nulls else "imputed" if code.null_imputed else "a level"}
        return out

    @property
    def n_base_clusters(self) -> int:
        return len(self.clusters)

    def profiles_with_stability(self) -> pd.DataFrame:
        """The cluster profiles with each cluster's Jaccard overlap with its matched earlier cluster (NaN for
        a cluster without one, or without an earlier run) after its mean confidence."""
        frame = self.evidence.profiles.copy()
        frame.insert(4, "jaccard_previous", [self.stable.jaccard.get(int(c), np.nan) for c in frame["cluster"]])
        return frame

    def evidence_metrics(self) -> tuple[dict, dict]:
        """(metrics, series) of the run's evidence: mean confidence and the share of rows below 0.5; PAC; each
        cluster's size, mean confidence, cohesion (and the count flagged mixed), with a label column its majority
        label's share (and the count below :data:`~lwec_tasks.core.label_table.MAJORITY_BELOW`), and its Jaccard
        overlap with its matched cluster of the earlier run (and their size-weighted mean); series: the consensus
        CDF over the co-association's values (step a of M: share of pairs at most a/M) and the automatic choice's
        criterion over k (for a given k, on the evidence's seeded sample: :mod:`lwec_tasks.core.k_curve`), with the
        k it is highest at (``k_criterion_best_k``) and the rows it was computed on (``k_criterion_rows``)."""
        metrics, series = {}, {}
        evidence = self.evidence
        if evidence.mean_confidence is not None:
            histogram = evidence.histogram
            metrics["confidence_mean"] = evidence.mean_confidence
            metrics["confidence_below_0_5_fraction"] = float(histogram[:len(histogram) // 2].sum()
                                                             / max(histogram.sum(), 1))
        if evidence.coassociation is not None:
            metrics["pac"] = evidence.coassociation.pac()
            metrics["pac_rows"] = evidence.pair_rows
            series["consensus_cdf"] = list(enumerate(evidence.coassociation.cdf.tolist()))
        profiles = evidence.profiles
        if profiles is not None:
            for row in profiles.itertuples():
                metrics[f"cluster_{row.cluster}_size"] = int(row.size)
                metrics[f"cluster_{row.cluster}_mean_confidence"] = float(row.mean_confidence)
            if "cohesion" in profiles:
                from lwec_tasks.core.cohesion import mixed_clusters

                for row in profiles.itertuples():
                    metrics[f"cluster_{row.cluster}_cohesion"] = float(row.cohesion)
                flagged = mixed_clusters(profiles["cohesion"], profiles["size"])
                metrics["clusters_flagged_mixed"] = int(flagged.sum())
        if evidence.label_table is not None:
            from lwec_tasks.core.label_table import MAJORITY_BELOW

            for row in evidence.label_table.itertuples():
                metrics[f"cluster_{row.cluster}_majority_share"] = float(row.majority_share)
            low = int((evidence.label_table["majority_share"] < MAJORITY_BELOW).sum())
            metrics[f"clusters_majority_below_{MAJORITY_BELOW:g}".replace(".", "_")] = low
        jaccard = self.stable.jaccard
        if jaccard:
            for cluster_id, value in sorted(jaccard.items()):
                metrics[f"cluster_{cluster_id}_jaccard_previous"] = value
            sizes = np.array([self.sizes[c] for c in sorted(jaccard)], dtype=np.float64)
            metrics["jaccard_previous_mean"] = float(np.dot(sizes, [jaccard[c] for c in sorted(jaccard)])
                                                     / max(sizes.sum(), 1.0))
            metrics["clusters_matched_previous"] = len(jaccard)
        curve = self.selection if self.selection is not None else evidence.k_curve
        if curve is not None:
            series["k_criterion"] = list(zip(np.asarray(curve.ks).tolist(), np.asarray(curve.scores).tolist()))
            metrics["k_criterion_best_k"] = int(curve.k)
            metrics["k_criterion_rows"] = (min(self.n_objects, SELECTION_SAMPLE) if self.selection is not None
                                           else evidence.k_curve_rows)
        return metrics, series

    def input_example(self) -> pd.DataFrame:
        """A few sampled training rows as raw feature values (the standardisation undone); base labels seen in
        fitting for a run on base columns."""
        from lwec_tasks.tracking.model import example_frame

        return example_frame(self.placement, self.sample_rows, INPUT_EXAMPLE_ROWS)
