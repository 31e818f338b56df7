"""URLs safe to print or log: database URLs and MLflow tracking URIs alike.

One masker for every address the package prints: the password in the
user-info part (``scheme://user:password@host``) and credentials in the query
string (``?password=``, ``?token=``, ``PWD=`` inside an ``odbc_connect``
connection string, ...) become ``***``. Standard library only, so the SQL and
MLflow edges can both use it without importing each other's dependencies.
"""

from __future__ import annotations

import re
from urllib.parse import quote, quote_plus, unquote, unquote_plus

MASK = "***"

#: Query-string parameters whose values are credentials (compared case-insensitively).
SECRET_QUERY_KEYS = frozenset({
    "password", "pwd", "passwd", "pass", "sslpassword", "token", "access_token", "auth_token",
    "secret", "client_secret", "api_key", "apikey", "sslkey_password",
})
#: Query-string parameters holding a whole driver connection string (``KEY=value;...``).
CONNECTION_STRING_KEYS = frozenset({"odbc_connect", "connection_string", "connect_string"})
_CONNECTION_STRING_SECRET = re.compile(
    r"(?i)(?<![A-Za-z_])(pwd|password|passwd|pass|token|access_token|accesstoken|secret)(\s*=\s*)"
    r"(\{(?:[^}]|\}\})*\}|[^;]*)"
)
#: ``scheme://`` at the start of a URL (RFC 3986 scheme characters; SQLAlchemy's ``dialect+driver`` fits).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
#: ``user:password@`` at the start of the authority. The password runs to the last ``@`` before the
#: query, so an unencoded ``@`` or ``/`` in it (which SQLAlchemy accepts) is hidden as well.
_USER_INFO = re.compile(r"(?P<user>[^:/@]*):(?P<password>.*)@", re.DOTALL)


def mask_query_value(key: str, value: str) -> str:
    """``value`` of query parameter ``key`` (both decoded), with credentials replaced by ``***``."""
    lowered = key.lower()
    if lowered in SECRET_QUERY_KEYS:
        return MASK
    if lowered in CONNECTION_STRING_KEYS:
        return _CONNECTION_STRING_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", value)
    return value


def mask_url(url) -> str:
    """Return ``url`` with any password replaced by ``***``.

    ``url`` is a database URL (a string or a ``sqlalchemy.URL``) or an MLflow
    tracking URI. Passwords in the user-info part and credentials in the query
    string (``password``, ``pwd``, ``sslpassword``, ``token``, ``PWD=`` inside
    ``odbc_connect``, ...) are hidden; every other character is kept as it was.
    Strings that do not parse as ``scheme://...`` (plain paths, malformed URLs)
    are returned with everything before an ``@`` hidden and any query string
    replaced by ``***``, so a malformed URL cannot leak a password either.
    """
    text = _as_text(url)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return _mask_unparsed(text)
    start = scheme.end()
    rest, fragment = _split_once(text[start:], "#")
    rest, query = _split_once(rest, "?")
    user_info = _USER_INFO.match(rest)
    if user_info and user_info.group("password"):
        rest = f"{user_info.group('user')}:{MASK}@{rest[user_info.end():]}"
    if query is not None:
        query = _mask_query(query)
    return (text[:start] + rest + ("" if query is None else f"?{query}")
            + ("" if fragment is None else f"#{fragment}"))


def url_has_credentials(url) -> bool:
    """Whether ``url`` carries a password (in its user-info part or its query string).

    Strings that do not parse as ``scheme://...`` count as carrying one when
    they contain ``@`` or ``?`` (what :func:`mask_url` hides in them).
    """
    return mask_url(url) != _as_text(url)


def scrub(text: str, url) -> str:
    """``text`` (e.g. an error message) with every secret of ``url`` replaced by ``***``.

    Hides the password (plain, percent-encoded or decoded) and the values of
    credential query parameters, wherever they appear in ``text``.
    """
    for secret in _secrets(_as_text(url)):
        for form in sorted({secret, quote(secret, safe=""), quote_plus(secret, safe=""), unquote(secret)},
                           key=len, reverse=True):
            text = text.replace(form, MASK)
    return text


def _as_text(url) -> str:
    """The URL as a string; a ``sqlalchemy.URL`` is rendered with its password (masked afterwards)."""
    if isinstance(url, str):
        return url
    render = getattr(url, "render_as_string", None)
    return render(hide_password=False) if callable(render) else str(url)


def _split_once(text: str, separator: str) -> tuple[str, str | None]:
    head, found, tail = text.partition(separator)
    return head, (tail if found else None)


def _mask_query(query: str) -> str:
    pieces = []
    for piece in query.split("&"):
        key, equals, value = piece.partition("=")
        if equals:
            decoded = unquote_plus(value)
            masked = mask_query_value(unquote_plus(key), decoded)
            if masked != decoded:
                piece = f"{key}={MASK if masked == MASK else quote_plus(masked, safe='*')}"
        pieces.append(piece)
    return "&".join(pieces)


def _mask_unparsed(text: str) -> str:
    head = text.split("?", 1)[0] + (f"?{MASK}" if "?" in text else "")
    return f"{MASK}@" + head.rsplit("@", 1)[1] if "@" in head else head


def _secrets(text: str) -> list[str]:
    """The password and credential query values of ``text`` (decoded and as written)."""
    scheme = _SCHEME.match(text)
    if scheme is None:
        return []
    rest, _ = _split_once(text[scheme.end():], "#")
    rest, query = _split_once(rest, "?")
    found = []
    user_info = _USER_INFO.match(rest)
    if user_info and user_info.group("password"):
        found.append(user_info.group("password"))
    for piece in (query or "").split("&"):
        key, equals, value = piece.partition("=")
        decoded = unquote_plus(value)
        if equals and unquote_plus(key).lower() in SECRET_QUERY_KEYS and decoded:
            found += [value, decoded]
        elif equals and unquote_plus(key).lower() in CONNECTION_STRING_KEYS:
            found += [m.group(3) for m in _CONNECTION_STRING_SECRET.finditer(decoded) if m.group(3)]
    return found


__all__ = ["MASK", "SECRET_QUERY_KEYS", "mask_query_value", "mask_url", "scrub", "url_has_credentials"]
