"""Prefect tasks of the consensus pipeline: thin wrappers over the stages (:mod:`lwec_tasks.stages`).

load → generate base clusterings → ECI → consensus (LWEA | LWGP) → stable cluster ids → write labels
→ labelling model → log to MLflow → summary (:mod:`.stages`, :mod:`.track`, :mod:`.summary`; the assign
flow's in :mod:`.assign`); the same tasks on either executor. The ``block:`` and ``secret:`` database URL
references are resolved once :func:`.credentials.register_block_resolvers` was called (where a run starts).
"""
