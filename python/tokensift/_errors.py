"""The exception every tokensift argument error raises."""

from __future__ import annotations


class TokensiftError(ValueError):
    """An argument error reported by tokensift.

    ``status`` is the library's status name (``"INVALID_TOP_P"``,
    ``"INVALID_DTYPE"``, ``"WORKSPACE_TOO_SMALL"``, ...; the names of
    ``tokensift_status`` in ``tokensift.h`` without the ``TOKENSIFT_ERROR_``
    prefix) and ``message`` the library's message for the failed call.
    """

    def __init__(self, status: str, message: str = "") -> None:
        super().__init__(f"{status}: {message}" if message else status)
        self.status = status
        self.message = message
