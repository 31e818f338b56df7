"""A command's start-up without the cyclic garbage collector's rounds.

Importing Prefect, MLflow and the numeric libraries makes hundreds of thousands of long-lived objects, and
Python's cyclic garbage collector walks the ones made so far again and again while they are being made. A
command that runs a flow holds collections off while it starts up (:func:`collections_held_off`), then freezes
every object made so far (``gc.freeze``: later collections skip the imported modules' objects) and collects as
usual from there (:meth:`HeldCollections.collect_from_here`). The start-up's little garbage is frozen with them
and kept until the command ends. A flow module imports its modules the same way
(:func:`imports_without_collections`), for the process of a deployed run, which imports it first.
Figures: BENCHMARKS.md.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class HeldCollections:
    """What :func:`collections_held_off` yields: the start-up's hold on the collector, released once by
    :meth:`collect_from_here`."""

    def __init__(self, holding: bool) -> None:
        self.holding = holding

    def collect_from_here(self) -> None:
        """Once the start-up's imports are done: freeze every object made so far and turn the collector on
        again. Does nothing after the first call, outside the block, or when the caller had turned it off."""
        if not self.holding:
            return
        self.holding = False
        gc.freeze()
        gc.enable()


@contextmanager
def collections_held_off() -> Iterator[HeldCollections]:
    """No cyclic collection in this block until the yielded hold's :meth:`~HeldCollections.collect_from_here`.
    On leaving it, the collector is as it was before and nothing stays frozen."""
    if not gc.isenabled():  # held off by the caller already: theirs to resume
        yield HeldCollections(holding=False)
        return
    gc.disable()
    held = HeldCollections(holding=True)
    try:
        yield held
    finally:
        held.holding = False
        gc.unfreeze()
        gc.enable()


@contextmanager
def imports_without_collections() -> Iterator[None]:
    """Imports in this block make no collection; afterwards every object made so far is frozen and the collector
    is on again. Nothing changes when collections are held off already (:func:`collections_held_off`)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
