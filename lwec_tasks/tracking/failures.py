"""Why logging to MLflow failed, in a few words: did the store answer, and what did it say.

MLflow reports an unreachable server as one long line naming the request, the
connection pool and the socket error; :func:`failure_reason` turns the usual
cases into a short reason and :func:`store_did_not_answer` tells a store that
did not answer (worth trying again later) from one that refused the request.
"""

from __future__ import annotations

import re

#: Longest part of an MLflow error message quoted in a reason.
MAX_DETAIL_LENGTH = 300

#: What MLflow's REST and SQL clients say when the store does not answer (as opposed to refusing a request).
_DID_NOT_ANSWER = re.compile(
    r"Max retries exceeded|Connection refused|ConnectionError|ConnectTimeout|timed out|"
    r"Name or service not known|Temporary failure in name resolution|could not connect|"
    r"Can't connect|server closed the connection|Connection reset|database is locked",
    re.IGNORECASE,
)
#: (pattern in the error text, reason); the first match wins.
_REASONS = (
    (re.compile(r"Connection refused", re.IGNORECASE), "the connection was refused"),
    (re.compile(r"Name or service not known|Temporary failure in name resolution|nodename nor servname|"
                r"getaddrinfo failed", re.IGNORECASE), "the host name does not resolve"),
    (re.compile(r"timed out|ConnectTimeout|timeout expired", re.IGNORECASE), "the store did not answer in time"),
    (re.compile(r"too many (\d{3}) error responses"), r"the store answered HTTP \1 to every attempt"),
    (re.compile(r"error code (\d{3})"), r"the store refused the request with HTTP \1"),
)


def store_did_not_answer(error: BaseException) -> bool:
    """Whether ``error`` says the store could not be reached (refused or timed-out connection,
    unknown host, repeated 5xx answers, a locked SQLite file) rather than refusing a request."""
    return bool(_DID_NOT_ANSWER.search(f"{type(error).__name__}: {error}"))


def failure_reason(error: BaseException) -> str:
    """A one-line reason for ``error``: ``"<reason> (<exception type>)"`` for the usual network
    failures and HTTP errors, else ``"<exception type>: <first line>"`` cut to 300 characters."""
    text = str(error)
    for pattern, reason in _REASONS:
        found = pattern.search(text)
        if found:
            return f"{found.expand(reason)} ({type(error).__name__})"
    return f"{type(error).__name__}: {first_line(text)[:MAX_DETAIL_LENGTH]}"


def first_line(text: str) -> str:
    """The first non-empty line of ``text`` ("" if none)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""
