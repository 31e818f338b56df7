"""Stage: the base clusterings (M k-means models, every row assigned).

Which rows each model is fitted on depends only on N and the seed (:mod:`lwec_tasks.stages.base_clusterings`);
the executor gathers those rows from the partitions, fits the models and assigns every partition. Plain numpy
and scikit-learn (no numba kernels).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from lwec_tasks.core.base_clusterings import categorical_k_max
from lwec_tasks.core.mixes import DEFAULT_MIX, canonical_mix
from lwec_tasks.core.seeds import base_seed
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.base_clusterings import base_plan, fit_base_model
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.sums import add_tables

if TYPE_CHECKING:
    from lwec_tasks.executors import Handle

#: Rows kept (a seeded uniform sample) for the cluster map, at most.
PICTURE_SAMPLE = 2_000


@dataclass(frozen=True, eq=False)
class FoundMicroclusters:
    """The microclusters (distinct label rows) of a partitioned ensemble.

    Attributes
    ----------
    table : handle of the merged :class:`~lwec_tasks.stages.reductions.Microclusters` (Ñ rows with their counts)
    size : Ñ, the number of microclusters
    index : handles of each partition's (n_p,) int64 row → microcluster index
    """

    table: Handle
    size: int
    index: list[Handle]


@dataclass(frozen=True, eq=False)
class PartitionedEnsemble:
    """The M base clusterings, their codes kept in the executor's partitions.

    Attributes
    ----------
    codes : handles of each partition's (M, n_p) int32 per-column codes
    ks : (M,) int64 clusters per base clustering
    cluster_sizes : (n_c,) int64 rows per base cluster, n_c = ks.sum(), clusters column by column
    cluster_label : (n_c,) int64 each base cluster's label value within its clustering
    models : handles of the M fitted base models; None for an ensemble read from label columns
    sample : (S,) int64 sorted table positions of a seeded sample of S ≤ :data:`PICTURE_SAMPLE` rows (the
        cluster map's rows)
    sample_rows : (S, d) those rows' features as clustered (their codes, for an ensemble read from label columns)
    dictionaries : each base column's label values in code order, for an ensemble read from label columns;
        default None
    micro : the microclusters (:class:`FoundMicroclusters`) once the ECI stage found
        them (:func:`~lwec_tasks.stages.ensemble.reliability` returns the ensemble with them); default None
    offsets : (M + 1,) int64 global id of each clustering's first cluster, then n_c (from ``ks``)
    cluster_column : (n_c,) the clustering each cluster belongs to (from ``ks``)
    """

    codes: list[Handle]
    ks: np.ndarray
    cluster_sizes: np.ndarray
    cluster_label: np.ndarray
    models: list[Handle] | None
    sample: np.ndarray
    sample_rows: np.ndarray
    dictionaries: list[list] | None = None
    micro: FoundMicroclusters | None = None

    @cached_property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.ks)]).astype(np.int64)

    @cached_property
    def cluster_column(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.ks)), self.ks)

    @property
    def n_microclusters(self) -> int | None:
        return None if self.micro is None else self.micro.size

    @property
    def n_columns(self) -> int:
        return len(self.ks)

    @property
    def n_clusters_total(self) -> int:
        return int(self.offsets[-1])


def local_positions(positions: np.ndarray, offsets: np.ndarray, p: int) -> np.ndarray:
    """The entries of sorted table ``positions`` that fall in partition p, as row indices within it."""
    start, stop = np.searchsorted(positions, [offsets[p], offsets[p + 1]])
    return positions[start:stop] - offsets[p]


def gather_rows(session, parts: list, positions: np.ndarray, offsets: np.ndarray, take, name: str,
                 **kwargs):
    """A future of the rows at sorted table ``positions``, in that order, taken from the partitions."""
    pieces = []
    for p, data in enumerate(parts):
        local = local_positions(positions, offsets, p)
        if len(local):
            pieces.append(session.submit(take, data, local, name=name, **kwargs))
    return session.submit(np.concatenate, pieces, name=f"{name}-concat")  # the futures in the list are resolved


def gather_standardised(table: PartitionedTable, positions: np.ndarray, name: str):
    """A future of the standardised features, (X − mean) / scale, of the rows at sorted table ``positions``
    (the matrix the base clusterings see)."""
    return gather_rows(table.session, table.rows, positions, table.offsets, part.standardised_rows, name,
                       mean=table.mean, scale=table.scale)


def base_clusterings(table: PartitionedTable, ensemble_size: int, seed: int | None, log,
                     generators: str = DEFAULT_MIX, n_clusters: int | None = None) -> PartitionedEnsemble:
    """M base clusterings by the library's rule: each model fitted on the rows the library fits it on
    (all rows, or above ``LARGE_N`` a seeded sample per clustering; for generators other than k-means up to
    ``FIT_SAMPLE`` rows), every partition assigned to the models; ``generators`` is the mix
    (:mod:`lwec_tasks.core.generators`). Each k is drawn from [2, ⌊√N⌋] (the paper's rule), or on a table with a
    weighted text or boolean column from [2, :func:`~lwec_tasks.core.base_clusterings.categorical_k_max`] of N and
    the requested ``n_clusters`` (None: k chosen by the run).

    The features stay in the partitions for the row confidences and cluster profiles
    (:mod:`lwec_tasks.stages.evidence`, which releases them); a seeded sample of at most
    :data:`PICTURE_SAMPLE` of the gathered rows is kept for the cluster map (see :func:`picture_positions`).
    """
    session = table.session
    weighted = table.encoding is not None and bool(table.encoding.weighted_categories)
    plan = base_plan(table.n_rows, ensemble_size, seed, generators,
                     categorical_k_max(table.n_rows, n_clusters) if weighted else None)
    positions = plan.positions
    rows = gather_standardised(table, positions, "base-sample")
    picture = picture_positions(positions, seed)
    picture_rows = session.submit(operator.getitem, rows, np.searchsorted(positions, picture), name="picture-rows")
    shared_positions = session.share(positions)
    session.load_libraries(plan.kinds)
    models = session.map(fit_base_model, plan.samples, plan.ks.tolist(), plan.seeds.tolist(), plan.kinds,
                         [plan.budget] * len(plan.kinds), name="fit-base", spread=True, rows=rows,
                         positions=shared_positions)
    fitted = "k-means" if set(plan.kinds) == {"kmeans"} else f"base ({canonical_mix(generators)})"
    Progress(log, f"fit {len(models)} {fitted} models on up to {max(map(len, plan.samples))} rows each").wait(
        models, rows=[len(sample) for sample in plan.samples])
    sample_rows = picture_rows.result()
    del picture_rows
    raw = session.map(part.assign_partition, table.rows, name="assign", mean=table.mean, scale=table.scale,
                      models=models)
    Progress(log, "assign rows to base clusters").wait(raw, rows=table.counts)
    sizes = tree_reduce(session, session.map(part.column_sizes, raw, name="sizes", ks=plan.ks), add_tables,
                        "sizes-sum").result()
    present = [np.flatnonzero(s) for s in sizes]
    if any(len(labels) < len(s) for labels, s in zip(present, sizes)):
        # each label's rank among the labels some row has (labels no row has never occur)
        lookups = [session.share((np.cumsum(s > 0) - 1).astype(np.int32)) for s in sizes]
        raw = session.map(part.compact_codes, raw, name="compact", lookups=lookups)
    ks = np.array([len(labels) for labels in present], dtype=np.int64)
    ensemble = PartitionedEnsemble(
        codes=raw, ks=ks, models=models, sample=picture, sample_rows=sample_rows,
        cluster_sizes=np.concatenate([s[labels] for labels, s in zip(present, sizes)]).astype(np.int64),
        cluster_label=np.concatenate(present).astype(np.int64))
    log.info("Generated %d base clusterings of %d objects: %d clusters in total (k per clustering %d–%d)",
             len(ks), table.n_rows, ensemble.n_clusters_total, int(ks.min()), int(ks.max()))
    return ensemble


def picture_positions(positions: np.ndarray, seed: int | None) -> np.ndarray:
    """A seeded sample of at most :data:`PICTURE_SAMPLE` of the sorted table ``positions``, sorted.

    Drawn from the run's seed alone, so when ``positions`` are all N rows (N ≤ ``LARGE_N``)
    and the seed is given, these are the same rows on either executor.
    """
    rng = np.random.default_rng(base_seed(seed))
    chosen = rng.choice(len(positions), size=min(PICTURE_SAMPLE, len(positions)), replace=False)
    return np.asarray(positions, dtype=np.int64)[np.sort(chosen)]
