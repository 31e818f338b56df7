"""The consensus pipeline's stages, each written once over partitions of rows.

The flow process plans and reduces; an executor (:mod:`lwec_tasks.executors`: in-process or Dask) runs the
per-partition functions. A stage that needs a global quantity gets it from a reduction of per-partition
results. In pipeline order:

- :mod:`~lwec_tasks.stages.read` — check the table, plan id-range partitions, read them, standardisation
- :mod:`~lwec_tasks.stages.generate` — the base clusterings
- :mod:`~lwec_tasks.stages.ensemble` — each base cluster's ECI
- :mod:`~lwec_tasks.stages.consensus` — LWEA or LWGP labels, k given or chosen
- :mod:`~lwec_tasks.stages.refinement` — naive-Bayes steps after the consensus where text or boolean columns
  move the rows
- :mod:`~lwec_tasks.stages.identities` — stable cluster ids (alignment with the latest earlier run)
- :mod:`~lwec_tasks.stages.write` — staged per partition, published in one transaction
- :mod:`~lwec_tasks.stages.model` — the labelling model from reductions

and what they share:

- :mod:`~lwec_tasks.stages.partitions` — what runs on one partition (read, standardise, assign, count,
  group into microclusters, write)
- :mod:`~lwec_tasks.stages.sums` — column moments and table sums (plain numpy, no numba)
- :mod:`~lwec_tasks.stages.reductions` — the other per-partition partial results and how they combine
- :mod:`~lwec_tasks.stages.whole_table` — whole-table steps on small reduced inputs (graph assembly, LWEA on
  microclusters, LWGP's k-means on microclusters)
- :mod:`~lwec_tasks.stages.base_clusterings` — which rows each base k-means model is fitted on
- :mod:`~lwec_tasks.stages.planning` — id-range partition bounds, the earlier run's cluster ids

Prefect is imported only by :mod:`lwec_tasks.tasks`; :mod:`distributed` only by the Dask executor. See
docs/pipeline.md and docs/scale.md.
"""
