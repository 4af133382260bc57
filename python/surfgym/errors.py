"""The client's exceptions, and the one place a server's error body is read.

Every error surfgym answers is ``{"error": {"type", "message", "fields"}}``
(docs/reference/api.md); one exception class carries its status, code and message so a
caller can branch on ``err.code`` (``capacity``, ``not_found``, ``invalid_request``, ...)
without parsing text. The statuses a training loop commonly handles get subclasses.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "SurfgymError",
    "CapacityError",
    "ForbiddenError",
    "NotFoundError",
    "ResetNeeded",
    "error_from_response",
]


class SurfgymError(Exception):
    """An error answered by the server (or no answer at all).

    ``status`` is the HTTP status; 0 when there was none (the server could not be reached,
    or the error came as an OpenEnv WebSocket message). ``code`` is the body's
    ``error.type`` (``not_found``, ``capacity``, ``forbidden``, ``invalid_request``, ...)
    or OpenEnv's code (``CAPACITY_REACHED``, ``VALIDATION_ERROR``, ...). ``fields`` lists
    the bad fields of a 400 as ``{"field", "message"}`` objects.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: list[dict[str, Any]] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.fields: list[dict[str, Any]] = list(fields or [])
        super().__init__(status, code, message)

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status else ""
        return f"{where}{self.code}: {self.message}"


class CapacityError(SurfgymError):
    """429: the server (or this token) has as many open sessions as it allows.

    Close a session, or retry later; nothing was opened.
    """


class ForbiddenError(SurfgymError):
    """403: the session belongs to another token, or the token's scope is too low."""


class NotFoundError(SurfgymError):
    """404: no such task, campaign, episode or session (a session is gone once it ended)."""


class ResetNeeded(RuntimeError):
    """An environment was stepped without an open session: call ``reset()`` first.

    Raised by :class:`surfgym.Env` after its episode terminated or was truncated (the
    server has already judged, stored and forgotten the session), or before any reset.
    """


_BY_STATUS: dict[int, type[SurfgymError]] = {
    403: ForbiddenError,
    404: NotFoundError,
    429: CapacityError,
}


def error_from_response(status: int, body: bytes | str | None) -> SurfgymError:
    """The exception for an error response, whatever shape its body has.

    surfgym's own routes answer ``{"error": {"type", "message", "fields"}}``; anything else
    (a proxy's HTML page, an empty body, ``{"detail": ...}``) still yields a readable
    message rather than a decoding error hiding the status.
    """
    if isinstance(body, bytes):
        text = body.decode("utf-8", errors="replace")
    else:
        text = body or ""
    code = f"http_{status}"
    message = text.strip() or f"HTTP {status} with an empty body"
    fields: list[dict[str, Any]] = []
    try:
        parsed: Any = json.loads(text) if text.strip() else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        err = parsed.get("error")
        if isinstance(err, dict):
            code = str(err.get("type") or err.get("code") or code)
            message = str(err.get("message") or message)
            raw_fields = err.get("fields")
            if isinstance(raw_fields, list):
                fields = [f for f in raw_fields if isinstance(f, dict)]
        elif isinstance(err, str):
            message = err
            code = str(parsed.get("code") or code)
        elif "detail" in parsed:
            message = str(parsed["detail"])
        elif "message" in parsed:
            message = str(parsed["message"])
            code = str(parsed.get("code") or code)
    cls = _BY_STATUS.get(status, SurfgymError)
    return cls(status, code, message, fields)
