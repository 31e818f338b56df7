"""The consensus pipeline's stages, each written once over partitions of rows.

The flow process plans and reduces; an executor (:mod:`lwec_tasks.executors`: in-process or Dask) runs the
per-partition functions. A stage that needs a global quantity gets it from a reduction of per-partition
results.

- :mod:`~lwec_tasks.stages.planning` — id-range partitions and the earlier run's ids
- :mod:`~lwec_tasks.stages.partitions` — what runs on one partition (read, standardise, assign, count,
  embed, k-means partial sums, write)
- :mod:`~lwec_tasks.stages.reductions` — per-partition partial results and how they combine
- :mod:`~lwec_tasks.stages.consensus` — whole-table steps on small reduced inputs (graph assembly, LWEA on
  microclusters, LWGP's k-means fits, the automatic choice of k)
- :mod:`~lwec_tasks.stages.base_clusterings` — the base-clustering rule on partitioned rows
- :mod:`~lwec_tasks.stages.pipeline` — the stages as the flow drives them

Prefect is imported only by :mod:`lwec_tasks.tasks`; :mod:`distributed` only by the Dask executor. See
docs/pipeline.md and docs/scale.md.
"""
