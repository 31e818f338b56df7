"""Exception types raised on bad input.

Every error names the offending thing (column, value, parameter) so that an
operator can fix the input without reading the code.
"""


class LwecInputError(ValueError):
    """The input (label matrix, features or a parameter) is not usable."""


class LwecMemoryError(LwecInputError, MemoryError):
    """The requested dense computation would not fit in memory."""
