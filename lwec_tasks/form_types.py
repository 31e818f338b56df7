"""Types of the flow parameters that take one of two kinds of value, as the Prefect UI form shows them.

Prefect builds its run form from the flow's signature. A parameter that is "an integer or something else"
becomes an ``anyOf``: the form shows one tab per alternative, labelled by the alternative's ``title``, and opens
on the first one when the parameter has no value. The types below fix those alternatives:

- :data:`ClusterCount` — ``n_clusters``: tab ``int`` first (at least 2), tab ``auto`` second (a one-choice
  list, not a greyed-out constant);
- :data:`OptionalSeed` — ``seed``: tab ``int`` (at least 0), tab ``None``;
- :data:`OptionalRunCount` — ``keep_runs``: tab ``int`` (at least 1), tab ``None``.

The validation is pydantic's (the bounds below) and then :class:`lwec_tasks.request.ConsensusRequest`'s.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from lwec_tasks.core.defaults import AUTO

#: The schema alternatives' titles, which the form shows as the tabs' names.
INT_TITLE, NONE_TITLE = "int", "None"


def _alternatives(minimum: int, other: dict) -> WithJsonSchema:
    """An integer of at least ``minimum`` (first) or ``other``. The bound stands beside the alternatives, not
    inside the integer one (``minimum`` only applies to numbers), so that a number below it is refused with
    "1 is less than the minimum of 2" rather than "1 is not valid under any of the given schemas"."""
    return WithJsonSchema({"minimum": minimum, "anyOf": [{"type": "integer", "title": INT_TITLE}, other]})


_NONE = {"type": "null", "title": NONE_TITLE}

#: ``n_clusters``: an integer k >= 2, or ``"auto"``.
ClusterCount = Annotated[Annotated[int, Field(ge=2)] | Literal["auto"],
                         _alternatives(2, {"type": "string", "enum": [AUTO], "title": AUTO})]
#: ``seed``: an integer >= 0, or None for a fresh random seed.
OptionalSeed = Annotated[Annotated[int, Field(ge=0)] | None, _alternatives(0, _NONE)]
#: ``keep_runs``: an integer >= 1, or None to keep every run.
OptionalRunCount = Annotated[Annotated[int, Field(ge=1)] | None, _alternatives(1, _NONE)]
