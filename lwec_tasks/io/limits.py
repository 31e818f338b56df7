"""Sizes shared by the readers and the run parameters (a module of its own, so the parameters load it cheaply)."""

#: Rows per chunk of the portable read (``pandas.read_sql``); the fast paths stream in blocks of their own.
DEFAULT_CHUNK_SIZE = 50_000
