"""The run's CPU and memory over time, as MLflow's system metrics (``system/...``), where psutil is present.

A consensus run's MLflow run is created once the labels are written, so MLflow's own monitor (which logs to a
run that exists) cannot watch the work. :class:`SystemSampler` samples with MLflow's collector
(``mlflow.system_metrics.metrics.cpu_monitor.CPUMonitor``: ``cpu_utilization_percentage``,
``system_memory_usage_megabytes``, ``system_memory_usage_percentage``) and psutil (this process's
``process_memory_rss_megabytes``) while the run works, and :meth:`SystemSampler.series` hands the samples to
the run's writer as ``system/<name>`` series (step = sample number), which the MLflow UI shows in its System
metrics tab. Without psutil it samples nothing.
"""

from __future__ import annotations

import logging
import threading
from contextlib import suppress

_log = logging.getLogger(__name__)

#: Seconds between two samples (MLflow's default sampling interval).
SAMPLING_SECONDS = 10.0
#: Prefix MLflow gives system metrics.
SYSTEM_PREFIX = "system/"


class SystemSampler:
    """Samples CPU and memory every ``interval`` seconds (default :data:`SAMPLING_SECONDS`) from ``start()``
    to ``stop()``, one sample at each end too, so that short runs have two. Use it as a context manager."""

    def __init__(self, interval: float = SAMPLING_SECONDS):
        self.interval = interval
        self._samples: dict[str, list[float]] = {}
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._collect = _collector()

    def __enter__(self) -> SystemSampler:
        if self._collect is not None:
            self._sample()
            self._thread = threading.Thread(target=self._run, name="lwec-system-metrics", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop sampling, after one last sample (idempotent)."""
        if self._thread is None:
            return
        self._stopped.set()
        self._thread.join()
        self._thread = None
        self._sample()

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """``system/<metric>`` → [(step, value)] for every metric sampled; empty without psutil."""
        return {SYSTEM_PREFIX + name: list(enumerate(values)) for name, values in self._samples.items()}

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        with suppress(Exception):  # a sample that cannot be taken must not stop the run
            for name, value in self._collect().items():
                self._samples.setdefault(name, []).append(float(value))


def _collector():
    """A function returning one sample (metric name → value), or None when psutil is missing."""
    try:
        import psutil
    except ImportError:
        _log.info("psutil is not installed: the MLflow run gets no system metrics")
        return None
    process = psutil.Process()
    try:
        from mlflow.system_metrics.metrics.cpu_monitor import CPUMonitor
    except ImportError:  # an MLflow without system metrics: the same figures straight from psutil
        CPUMonitor = None  # noqa: N806
    psutil.cpu_percent()  # the first call only starts psutil's measuring interval

    def collect() -> dict[str, float]:
        sample = {}
        if CPUMonitor is not None:
            monitor = CPUMonitor()
            monitor.collect_metrics()
            sample.update({name: values[-1] for name, values in monitor.metrics.items()})
        else:
            memory = psutil.virtual_memory()
            sample.update(cpu_utilization_percentage=psutil.cpu_percent(),
                          system_memory_usage_megabytes=memory.used / 1e6,
                          system_memory_usage_percentage=memory.used / memory.total * 100)
        sample["process_memory_rss_megabytes"] = process.memory_info().rss / 1e6
        return sample

    return collect
