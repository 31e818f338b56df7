"""lwec's Prefect worker type, ``lwec-warm-process``: flow runs start from a process that has imported the flows.

Prefect finds it through the ``prefect.collections`` entry point, so ``prefect worker start --pool P --type
lwec-warm-process`` and ``prefect work-pool create P --type lwec-warm-process`` know it once lwec is installed.
:class:`~lwec_tasks.worker.warm_process.WarmProcessWorker` is the worker; :mod:`.warm_start` starts the flow runs'
processes; :mod:`.warm_imports` is what the warm process imports.
"""

from lwec_tasks.worker.warm_process import WORKER_TYPE, WarmProcessWorker

__all__ = ["WORKER_TYPE", "WarmProcessWorker"]
