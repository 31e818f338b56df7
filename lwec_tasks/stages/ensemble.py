"""Stage: each base cluster's ECI, from the pairwise contingency tables of the base clusterings
(:mod:`lwec_tasks.stages.generate`) counted over the microclusters (distinct label rows, found per partition
and merged).
"""

from __future__ import annotations

import operator

import numpy as np

from lwec_tasks.core.eci import eci_from_uncertainty
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.stages.generate import PartitionedEnsemble
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.reductions import (
    merge_microclusters,
    microcluster_index,
    microcluster_pair_tables,
    microclusters_of,
    split_entropy_terms,
)


class FoundMicroclusters:
    """The merged microcluster table (a future of :class:`~lwec_tasks.stages.reductions.Microclusters`), its size
    and each partition's row → microcluster index (futures of (n_p,) int64)."""

    def __init__(self, table, size: int, index: list):
        self.table, self.size, self.index = table, size, index


def find_microclusters(table: PartitionedTable, ensemble: PartitionedEnsemble, log) -> FoundMicroclusters:
    """The distinct label rows with their counts (a group-by per partition, merged by a tree reduction) and
    each row's microcluster; kept as ``ensemble.micro``."""
    session = table.session
    located = session.map(microclusters_of, ensemble.codes, name="microclusters", radices=np.diff(ensemble.offsets))
    Progress(log, "microclusters").wait(located, rows=table.counts)
    parts = session.map(operator.itemgetter(0), located, name="microcluster-table")
    merged = tree_reduce(session, parts, merge_microclusters, "microclusters-merge")
    size = int(session.submit(len, merged, name="count").result())
    index = session.map(microcluster_index, located, name="micro-index", table=merged)
    ensemble.micro = FoundMicroclusters(merged, size, index)
    log.info("Found %d microclusters (distinct label rows) among %d rows", size, table.n_rows)
    return ensemble.micro


def reliability(table: PartitionedTable, ensemble: PartitionedEnsemble, theta: float,
                log) -> tuple[np.ndarray, np.ndarray]:
    """(uncertainty H^Π, ECI) of every base cluster, from the pairwise contingency tables counted over the
    microclusters (:func:`find_microclusters`, which the consensus then uses)."""
    session = table.session
    micro = find_microclusters(table, ensemble, log)
    tables = session.submit(microcluster_pair_tables, micro.table, ensemble.ks, name="contingency")
    terms = session.submit(split_entropy_terms, tables, ensemble.offsets, ensemble.cluster_sizes, name="entropies")
    uncertainty = terms.result().sum(axis=0)
    eci = eci_from_uncertainty(uncertainty, theta, ensemble.n_columns)
    log.info("ECI (θ=%g) over %d clusters: min %.3f, median %.3f, max %.3f", theta, len(eci), eci.min(),
             np.median(eci), eci.max())
    return uncertainty, eci
