"""Stage: the evidence a person reads — row confidence, cluster profiles, the consensus CDF and PAC.

Runs on the written ids (after stable ids), before the labels are written, on either executor:

1. each partition sums its raw features per label and counts its rows per (base cluster, label)
   (:func:`~lwec_tasks.stages.evidence_parts.evidence_sums`); a fixed-order reduction adds them up;
2. from the sums, the clusters' centres in the clustered space and the base clusters' shares; each partition
   computes its rows' confidences (kept there, written beside the labels) and their per-label sums;
3. the cluster profiles (:mod:`lwec_tasks.core.profiles`) from those sums and the table's column moments, with
   each cluster's cohesion (:mod:`lwec_tasks.core.cohesion`) from the (base cluster, label) counts; for a run
   given a label column, the cluster × label table (:mod:`lwec_tasks.core.label_table`) from per-partition
   counts;
4. the co-association's distribution over all pairs of objects from the microclusters
   (:mod:`lwec_tasks.core.coassociation_cdf`), one task where the microcluster table lives; beyond
   :data:`COASSOCIATION_MICROCLUSTERS` microclusters, over the pairs of a seeded sample of rows;
5. for a run whose k was given, the automatic choice's criterion over k on a seeded sample of
   :data:`~lwec_tasks.core.k_curve.K_CURVE_SAMPLE` rows (:mod:`lwec_tasks.core.k_curve`), one task.

The features are released from the partitions afterwards.
"""

from __future__ import annotations

import functools
import operator
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lwec_tasks.core.coassociation_cdf import CoassociationDistribution, coassociation_distribution
from lwec_tasks.core.cohesion import cluster_cohesion
from lwec_tasks.core.confidence import base_shares
from lwec_tasks.core.confidence_level import ClusterGaussians, LevelCounts
from lwec_tasks.core.errors import LwecInputError, LwecMemoryError
from lwec_tasks.core.k_criterion import KSelection, selection_sample
from lwec_tasks.core.k_curve import K_CURVE_SILHOUETTE_SAMPLE, curve_sample
from lwec_tasks.core.label_table import cluster_label_table
from lwec_tasks.core.profiles import cluster_profiles
from lwec_tasks.executors.progress import tree_reduce
from lwec_tasks.stages import evidence_parts as parts
from lwec_tasks.stages.consensus import PartitionedLabels
from lwec_tasks.stages.generate import PartitionedEnsemble, gather_rows, gather_standardised
from lwec_tasks.stages.partitions import add_counts, code_rows, truth_counts
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.sums import add_tables

#: Histogram bins of the confidences (equal widths over [0, 1]) kept for the figure and the summary.
CONFIDENCE_BINS = 20
#: Above this many base clusterings the co-association's distribution is not computed (its search over
#: column subsets grows as 2^M at worst).
COASSOCIATION_MAX_COLUMNS = 16
#: Up to this many microclusters the co-association's distribution is computed over all rows (about 0.15 s per
#: 10,000 microclusters of 1M blob rows); beyond, over the rows of the automatic choice of k's seeded sample
#: (:func:`~lwec_tasks.core.k_criterion.selection_sample`), exactly for those rows.
COASSOCIATION_MICROCLUSTERS = 40_000


@dataclass(frozen=True, eq=False)
class EvidenceSummary:
    """The small, picklable part of a run's :class:`RunEvidence` (no per-row handles) that its MLflow run, summary
    and figures report; every field's default is what a run without evidence reports (``EvidenceSummary()``).

    Attributes
    ----------
    profiles : one row per non-empty cluster id (:func:`~lwec_tasks.core.profiles.cluster_profiles`), or None
    feature_columns : the profiles' feature columns
    histogram : (CONFIDENCE_BINS,) rows per confidence bin, or None
    coassociation : the co-association's distribution over the pairs of ``pair_rows`` rows, or None
    k_curve : the automatic choice's criterion over k on ``k_curve_rows`` rows, for a run whose k was given, or None
    label_table : the cluster × label table of a run given ``label_column``, or None
    """

    profiles: pd.DataFrame | None = None
    feature_columns: tuple[str, ...] = ()
    histogram: np.ndarray | None = None
    coassociation: CoassociationDistribution | None = None
    pair_rows: int = 0
    k_curve: KSelection | None = None
    k_curve_rows: int = 0
    label_table: pd.DataFrame | None = None
    label_column: str | None = None

    @property
    def mean_confidence(self) -> float | None:
        """The rows' mean confidence (the clusters' means weighted by their sizes); None without profiles."""
        if self.profiles is None:
            return None
        sizes = self.profiles["size"].to_numpy(dtype=np.float64)
        return float(np.dot(sizes, self.profiles["mean_confidence"]) / max(sizes.sum(), 1.0))


@dataclass(frozen=True, eq=False)
class RunEvidence:
    """What the stage found: ``confidence`` handles of each partition's (n_p,) float32 confidences;
    ``profiles`` (one row per non-empty cluster id, :func:`~lwec_tasks.core.profiles.cluster_profiles`);
    ``feature_columns``; ``overlap`` (n_c, k) rows per (base cluster, id); ``centres`` (k, d) the clusters'
    centres in the clustered space (None without features); ``histogram`` (CONFIDENCE_BINS,) rows per
    confidence bin; ``coassociation`` the co-association's distribution (None beyond
    :data:`COASSOCIATION_MAX_COLUMNS` columns) over the pairs of ``pair_rows`` rows (all, or a seeded sample
    beyond :data:`COASSOCIATION_MICROCLUSTERS` microclusters); ``seconds`` per part; ``k_curve`` the automatic
    choice's criterion over k (:class:`~lwec_tasks.core.k_criterion.KSelection`) on ``k_curve_rows`` rows, for a
    run whose k was given (None otherwise, or when it could not be computed); ``label_table`` the cluster × label
    table (:func:`~lwec_tasks.core.label_table.cluster_label_table`) of a run given ``label_column``, else None;
    ``level_map`` the confidence's level (:meth:`~lwec_tasks.core.confidence_level.LevelCounts.level_map`, None
    when the map's values are kept) and ``gaussian_fit`` the share of rows the clusters' Gaussians fit (None
    without features)."""

    confidence: list
    profiles: pd.DataFrame
    feature_columns: tuple[str, ...]
    overlap: np.ndarray
    centres: np.ndarray | None
    histogram: np.ndarray
    coassociation: CoassociationDistribution | None
    seconds: dict
    pair_rows: int = 0
    k_curve: KSelection | None = None
    k_curve_rows: int = 0
    label_table: pd.DataFrame | None = None
    label_column: str | None = None
    level_map: np.ndarray | None = None
    gaussian_fit: float | None = None

    def summary(self) -> EvidenceSummary:
        """What the run's MLflow run, summary and figures report of the evidence (no per-row handles)."""
        return EvidenceSummary(self.profiles, self.feature_columns, self.histogram, self.coassociation,
                               self.pair_rows, self.k_curve, self.k_curve_rows, self.label_table, self.label_column)

    @property
    def mean_confidence(self) -> float:
        return self.summary().mean_confidence


def run_evidence(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels, log,
                 seed: int | None = None, method: str | None = None, theta: float | None = None) -> RunEvidence:
    """Row confidences, cluster profiles and the co-association's distribution of a finished consensus (the
    module's docstring); with ``method`` and ``theta`` and a given k (``labels.selection`` None), the k curve.
    Releases the partitions' features."""
    session = table.session
    k = len(labels.sizes)
    seconds = {}
    started = time.perf_counter()
    rows = table.rows if table.holds_rows else [None] * table.n_partitions
    sums_f = session.map(parts.evidence_sums, rows, ensemble.codes, labels.labels, name="evidence-sums", k=k,
                         offsets=ensemble.offsets)
    sums, overlap = tree_reduce(session, sums_f, add_tables, "evidence-sums-sum").result()
    has_features = sums.sums.shape[1] > 0 and table.holds_rows
    present = sums.counts > 0
    centres = (sums.means - table.mean) / table.scale if has_features else None
    shares = base_shares(overlap, ensemble.cluster_sizes)
    scores = session.map(parts.partition_confidence, rows, ensemble.codes, labels.labels, name="confidence",
                         offsets=ensemble.offsets, mean=table.mean, scale=table.scale, centres=centres,
                         present=present, shares=session.share(shares))
    level_map, gaussian_fit = None, None
    if has_features:
        counts = tree_reduce(session, session.map(parts.partition_level_counts, rows, labels.labels, scores,
                                                  name="confidence-level", gaussians=ClusterGaussians.of(sums)),
                             add_level_counts, "confidence-level-sum").result()
        level_map, gaussian_fit = counts.level_map(), counts.gaussian_fit
    confidence = session.map(parts.levelled_confidence, rows, scores, name="confidence-levelled",
                             level_map=level_map)
    by_label = np.sum(session.gather(session.map(parts.confidence_sums, labels.labels, confidence,
                                                 name="confidence-sums", k=k)), axis=0)
    histogram = np.sum(session.gather(session.map(confidence_histogram, confidence, name="confidence-histogram")),
                       axis=0)
    wants_curve = method is not None and labels.selection is None
    curve_positions = k_curve_positions(table.n_rows, seed) if wants_curve else None
    curve_features = (gather_standardised(table, curve_positions, "k-curve-features")
                      if wants_curve and table.holds_features else None)
    table.release_rows()  # the features are no longer needed (but for the k curve's sample): free the workers' memory
    seconds["confidence"] = time.perf_counter() - started
    moments = table.moments
    if has_features and moments is not None and moments.n:
        table_mean, table_std = moments.mean, np.sqrt(moments.variance)
    elif has_features:
        n = max(sums.counts.sum(), 1)
        table_mean = sums.sums.sum(axis=0) / n
        table_std = np.sqrt(np.clip(sums.squares.sum(axis=0) / n - table_mean**2, 0, None))
    else:
        table_mean = table_std = np.zeros(0)
    features = table.feature_names if has_features else ()
    shares = table.encoding.category_mask() if has_features and table.encoding is not None else None
    cohesion = cluster_cohesion(overlap, ensemble.cluster_column, ensemble.n_columns)
    profiles = cluster_profiles(sums, by_label, features, table_mean, table_std, shares, cohesion)
    label_column = table.plan.label_column if table.keys is not None else None
    label_table = label_counts_table(table, labels, label_column) if label_column else None
    started = time.perf_counter()
    coassociation, pair_rows = None, 0
    if ensemble.n_columns <= COASSOCIATION_MAX_COLUMNS:
        if ensemble.micro is not None and ensemble.n_microclusters <= COASSOCIATION_MICROCLUSTERS:
            coassociation = session.submit(micro_coassociation, ensemble.micro.table, name="coassociation").result()
            pair_rows = table.n_rows
        else:
            positions = selection_sample(table.n_rows, seed)
            positions = np.arange(table.n_rows) if positions is None else positions
            sample = gather_rows(session, ensemble.codes, positions, table.offsets, code_rows, "coassociation-rows")
            coassociation = session.submit(sample_coassociation, sample, name="coassociation").result()
            pair_rows = len(positions)
    seconds["coassociation"] = time.perf_counter() - started
    k_curve, k_curve_rows = None, 0
    if wants_curve:
        started = time.perf_counter()
        k_curve, k_curve_rows = given_k_curve(table, ensemble, method, theta, seed, log, curve_positions,
                                              curve_features)
        seconds["k_curve"] = time.perf_counter() - started
    evidence = RunEvidence(confidence, profiles, features, overlap, centres, histogram, coassociation, seconds,
                           pair_rows, k_curve, k_curve_rows, label_table, label_column, level_map, gaussian_fit)
    pac = (f"consensus CDF not computed (more than {COASSOCIATION_MAX_COLUMNS} base clusterings)"
           if coassociation is None else f"PAC (co-association in (0.1, 0.9)) {coassociation.pac():.4f} over the "
           f"pairs of {'all' if pair_rows == table.n_rows else 'a seeded sample of'} {pair_rows} rows "
           f"({seconds['coassociation']:.2f} s)")
    level = ("no features: the map's level" if gaussian_fit is None
             else f"level from the clusters' Gaussian posterior (it fits {gaussian_fit:.1%} of rows)"
             if level_map is not None else
             f"the map's level (the clusters' Gaussians fit only {gaussian_fit:.1%} of rows)")
    log.info("Row confidence: mean %.3f, %.1f%% of rows below 0.5, %s (%.2f s); %s", evidence.mean_confidence,
             100 * histogram[:CONFIDENCE_BINS // 2].sum() / max(histogram.sum(), 1), level, seconds["confidence"],
             pac)
    return evidence


def label_counts_table(table: PartitionedTable, labels: PartitionedLabels, label_column: str) -> pd.DataFrame:
    """The cluster × label table of the written ids against ``label_column``: each partition counts its rows per
    (label value, id), a fixed-order reduction adds the counts up."""
    session = table.session
    counts = session.map(truth_counts, table.keys, labels.labels, name="label-counts")
    return cluster_label_table(tree_reduce(session, counts, add_counts, "label-counts-sum").result(), label_column)


def k_curve_positions(n_rows: int, seed: int | None) -> np.ndarray:
    """Sorted table positions of the k curve's rows: :func:`~lwec_tasks.core.k_curve.curve_sample`'s, or all."""
    positions = curve_sample(n_rows, seed)
    return np.arange(n_rows) if positions is None else positions


def given_k_curve(table: PartitionedTable, ensemble: PartitionedEnsemble, method: str, theta: float,
                  seed: int | None, log, positions: np.ndarray, features=None) -> tuple[KSelection | None, int]:
    """(the automatic choice's criterion over k on the rows at ``positions`` (:func:`k_curve_positions`), their
    count), one task; ``features``: those rows' standardised features (a future or an array; None: the criterion
    of the ensemble alone). (None, 0) with a warning when the ensemble allows no choice there."""
    from lwec_tasks.core.auto_k import select_k

    sample = gather_rows(table.session, ensemble.codes, positions, table.offsets, code_rows, "k-curve-rows")
    try:
        curve = table.session.submit(select_k, sample, method, theta, random_state=seed, features=features,
                                     silhouette_rows=K_CURVE_SILHOUETTE_SAMPLE, name="k-curve").result()
    except (LwecInputError, LwecMemoryError) as error:
        log.warning("k curve not computed: %s", error)
        return None, 0
    log.info("k curve on a seeded sample of %d rows: the criterion (%s) is highest at k=%d", len(positions),
             curve.criterion, curve.k)
    return curve, len(positions)


def add_level_counts(*counts: LevelCounts) -> LevelCounts:
    """The sum of partitions' :class:`~lwec_tasks.core.confidence_level.LevelCounts`."""
    return functools.reduce(operator.add, counts)


def confidence_histogram(confidence: np.ndarray) -> np.ndarray:
    """(CONFIDENCE_BINS,) rows per equal-width bin of [0, 1]."""
    return np.histogram(confidence, bins=CONFIDENCE_BINS, range=(0.0, 1.0))[0]


def sample_coassociation(codes: np.ndarray) -> CoassociationDistribution:
    """The co-association's distribution over the pairs of the rows of ``codes`` (S, M)."""
    rows, counts = np.unique(np.asarray(codes), axis=0, return_counts=True)
    return coassociation_distribution(rows, counts)


def micro_coassociation(micro) -> CoassociationDistribution:
    """The co-association's distribution from a microcluster table (rows, counts)."""
    return coassociation_distribution(micro.rows, micro.counts)
