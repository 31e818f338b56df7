"""A flow run's SIGTERM that is its cancel: ended as an abort, not reported as a crash.

Cancelling a running flow run (the UI's Cancel, ``prefect flow-run cancel``) puts it in state Cancelling; its
worker then ends its process with SIGTERM and marks it Cancelled. Prefect's engine reports a SIGTERM as a
crash (state Crashed, "Execution was aborted by a termination signal") unless the worker told it beforehand,
over a channel that only works while Prefect's own SIGTERM handler is the one in force, which the flow's stop
recording (:func:`lwec_tasks.stopping.stops_recorded`) is not. So every cancel passed through Crashed, and
an automation on Crashed fired for each one. :func:`cancel_of_this_flow_run` asks the API instead: a SIGTERM
that finds the run Cancelling (or Cancelled) ends it with :class:`prefect.exceptions.Abort`, which the engine
leaves without proposing a state, so the worker's Cancelled is the run's next state.
"""

from __future__ import annotations

import signal

from lwec_tasks.stopping import stops_recorded
from lwec_tasks.tasks.api_client import client_asking_once

#: Seconds the API has to say whether the run is being cancelled (one try) before SIGTERM is taken as a crash.
STATE_TIMEOUT_SECONDS = 2.0


def flow_run_stops():
    """The block of a flow's body (:func:`lwec_tasks.stopping.stops_recorded`): SIGINT and SIGTERM recorded as stop
    requests, so nothing is published after them, and a SIGTERM that is the run's cancel ending it as an abort
    (:func:`cancel_of_this_flow_run`) instead of Prefect's crash."""
    return stops_recorded(instead=cancel_of_this_flow_run)


def cancel_of_this_flow_run(signum: int) -> BaseException | None:
    """For signal ``signum`` arriving in a flow run's process: :class:`prefect.exceptions.Abort` when it is
    SIGTERM and the API says the run is Cancelling or Cancelled; None otherwise (outside a flow run, another
    signal, a running run, an API that does not answer within :data:`STATE_TIMEOUT_SECONDS`)."""
    if signum != signal.SIGTERM:
        return None
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return None
    state = _state_of(context.flow_run.id)
    if state is None or not (state.is_cancelling() or state.is_cancelled()):
        return None
    from prefect.exceptions import Abort

    return Abort(f"Flow run cancelled: {state.message or state.name}")


def _state_of(flow_run_id):
    """The flow run's state as the API has it now, or None if the API does not answer within
    :data:`STATE_TIMEOUT_SECONDS` (asked once: the signal waits meanwhile)."""
    try:
        with client_asking_once(STATE_TIMEOUT_SECONDS) as client:
            return client.read_flow_run(flow_run_id).state
    except Exception:  # noqa: BLE001 - no answer: the signal is what it would have been without this check
        return None
