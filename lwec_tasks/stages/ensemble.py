"""Stage: each base cluster's ECI, from the pairwise contingency tables of the base clusterings
(:mod:`lwec_tasks.stages.generate`) counted over the microclusters (distinct label rows, found per partition
and merged).
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.eci import eci_from_uncertainty
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.stages.generate import FoundMicroclusters, PartitionedEnsemble
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.reductions import (
    merge_microclusters,
    microcluster_index,
    microcluster_pair_tables,
    microclusters_of,
    split_entropy_terms,
)


@dataclass(frozen=True)
class ClusterReliability:
    """Per-base-cluster uncertainty H^Π (bits) and ECI, each shape (n_c,), in the ensemble's cluster order."""

    uncertainty: np.ndarray
    eci: np.ndarray


def find_microclusters(table: PartitionedTable, ensemble: PartitionedEnsemble, log) -> FoundMicroclusters:
    """The distinct label rows with their counts (a group-by per partition, merged by a tree reduction) and
    each row's microcluster."""
    session = table.session
    located = session.map(microclusters_of, ensemble.codes, name="microclusters", radices=np.diff(ensemble.offsets))
    Progress(log, "microclusters").wait(located, rows=table.counts)
    parts = session.map(operator.itemgetter(0), located, name="microcluster-table")
    merged = tree_reduce(session, parts, merge_microclusters, "microclusters-merge")
    size = int(session.submit(len, merged, name="count").result())
    index = session.map(microcluster_index, located, name="micro-index", table=merged)
    log.info("Found %d microclusters (distinct label rows) among %d rows", size, table.n_rows)
    return FoundMicroclusters(merged, size, index)


def reliability(table: PartitionedTable, ensemble: PartitionedEnsemble, theta: float,
                log) -> tuple[PartitionedEnsemble, ClusterReliability]:
    """(the ensemble with its microclusters as ``micro``, the uncertainty H^Π and ECI of every base cluster), from
    the pairwise contingency tables counted over the microclusters (:func:`find_microclusters`; the consensus, the
    evidence and the labelling model use them too)."""
    session = table.session
    micro = find_microclusters(table, ensemble, log)
    tables = session.submit(microcluster_pair_tables, micro.table, ensemble.ks, name="contingency")
    terms = session.submit(split_entropy_terms, tables, ensemble.offsets, ensemble.cluster_sizes, name="entropies")
    uncertainty = terms.result().sum(axis=0)
    eci = eci_from_uncertainty(uncertainty, theta, ensemble.n_columns)
    log.info("ECI (θ=%g) over %d clusters: min %.3f, median %.3f, max %.3f", theta, len(eci), eci.min(),
             np.median(eci), eci.max())
    return dataclasses.replace(ensemble, micro=micro), ClusterReliability(uncertainty, eci)
