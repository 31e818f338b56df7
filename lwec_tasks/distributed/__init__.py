"""The consensus pipeline on an existing Dask cluster: the flow process plans, the workers do the rows.

- :mod:`~lwec_tasks.distributed.cluster` — connecting to the scheduler (failing fast), submitting,
  fixed-order tree reductions, progress in rows per second
- :mod:`~lwec_tasks.distributed.planning` — id-range partitions, the staging table and the one
  transaction that publishes the labels
- :mod:`~lwec_tasks.distributed.partitions` — what a worker does with one partition (read, standardise,
  assign, count, embed, k-means partial sums, write)
- :mod:`~lwec_tasks.distributed.reductions` — per-partition partial results and how they combine
- :mod:`~lwec_tasks.distributed.consensus` — whole-table steps on small reduced inputs (graph assembly,
  LWEA on microclusters, LWGP's k-means fits)
- :mod:`~lwec_tasks.distributed.base_clusterings` — the local base-clustering rule on partitioned rows
- :mod:`~lwec_tasks.distributed.pipeline` — the stages as the flow drives them

Prefect is imported only by :mod:`lwec_tasks.tasks.distributed`; :mod:`distributed` only by the flow
process (the workers need ``dask[distributed]`` installed to run at all, but import nothing from it here).
See docs/scale.md.
"""

from lwec_tasks.distributed.cluster import DaskUnreachableError

__all__ = ["DaskUnreachableError"]
