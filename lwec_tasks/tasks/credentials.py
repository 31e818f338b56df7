"""Database URLs kept in Prefect blocks: ``block:NAME`` and ``secret:NAME`` references.

* ``block:NAME`` — a prefect-sqlalchemy ``SqlAlchemyConnector`` block; its
  connection info (a URL or driver/host/user/password components) gives the URL.
* ``secret:NAME`` — a Prefect ``Secret`` block whose value is the URL.

:func:`register_block_resolvers` registers both with :mod:`lwec_tasks.io.connection`; a run calls it where it
starts (the flows' bodies, the command line before its checks), and its labels store
(:class:`~lwec_tasks.io.label_store.LabelStore`) then resolves the reference once, in the first task that
connects. The URL is never logged or stored with the flow run.
"""

from __future__ import annotations

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.connection import register_url_resolver


def url_from_connector_block(name: str) -> str:
    """The SQLAlchemy URL of the ``SqlAlchemyConnector`` block called ``name``."""
    try:
        from prefect_sqlalchemy import SqlAlchemyConnector
    except ModuleNotFoundError as error:
        raise LwecInputError(
            f"database_url='block:{name}' needs prefect-sqlalchemy: pip install prefect-sqlalchemy"
        ) from error
    try:
        connector = SqlAlchemyConnector.load(name)
    except ValueError as error:
        raise LwecInputError(f"database_url='block:{name}': no SqlAlchemyConnector block named {name!r} ({error})") \
            from None
    info = connector.connection_info
    url = info if isinstance(info, str) else info.create_url()
    return url if isinstance(url, str) else url.render_as_string(hide_password=False)


def url_from_secret_block(name: str) -> str:
    """The value of the Prefect ``Secret`` block called ``name``."""
    from prefect.blocks.system import Secret

    try:
        value = Secret.load(name).get()
    except ValueError as error:
        raise LwecInputError(f"database_url='secret:{name}': no Secret block named {name!r} ({error})") from None
    if not isinstance(value, str) or not value:
        raise LwecInputError(f"database_url='secret:{name}': the Secret block does not hold a URL string")
    return value


def register_block_resolvers() -> None:
    """From now on in this process, resolve ``block:NAME`` and ``secret:NAME`` database URLs through Prefect's
    blocks (:func:`url_from_connector_block`, :func:`url_from_secret_block`). Calling it again changes nothing."""
    register_url_resolver("block", url_from_connector_block)
    register_url_resolver("secret", url_from_secret_block)
