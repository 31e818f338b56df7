"""Prefect tasks of the consensus pipeline: thin wrappers over the stages (:mod:`lwec_tasks.stages`).

load → generate base clusterings → ECI → consensus (LWEA | LWGP) → stable cluster ids → write labels
→ labelling model → log to MLflow → summary (:mod:`.stages`, :mod:`.track`, :mod:`.summary`; the assign
flow's in :mod:`.assign`); the same tasks on either executor.
Importing this package registers the ``block:`` and ``secret:`` database URL references.
"""

from lwec_tasks.tasks import credentials  # noqa: F401 - registers the Prefect block URL resolvers
