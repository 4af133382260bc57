"""Clients for surfgym's OpenEnv routes (``/openenv``), over HTTP and over a WebSocket.

For trainers built on OpenEnv (TRL, SkyRL, torchforge, ...) that expect its protocol:
``reset`` / ``step`` / ``state``, observations with BrowserGym's keys and actions sent as
``{"action_str": ...}``. Over HTTP the session id travels in each request; over the
WebSocket the socket is the session, which suits one long-lived connection per rollout
worker. Answers are returned as the server sent them (screenshots stay base64 text), as
an OpenEnv client would see them.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any

from .client import DEFAULT_URL, Client
from .errors import CapacityError, NotFoundError, SurfgymError, error_from_response

__all__ = ["OpenEnvClient", "OpenEnvWebSocket"]

JSON = dict[str, Any]


class OpenEnvClient:
    """OpenEnv over HTTP: ``POST /openenv/reset``, ``POST /openenv/step``, ``GET /openenv/state``.

    Holds the current session's id (from the reset's ``metadata``) and sends it with each
    call. A reset while a session is open ends that one first (the server does so when
    given its id).
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 120.0,
        *,
        client: Client | None = None,
    ) -> None:
        self.client = client if client is not None else Client(base_url, token, timeout)
        self.session_id: str | None = None
        self.episode_id: str | None = None

    def health(self) -> JSON:
        return self.client._obj("GET", "/openenv/health")

    def metadata(self) -> JSON:
        return self.client._obj("GET", "/openenv/metadata")

    def schema(self) -> JSON:
        return self.client._obj("GET", "/openenv/schema")

    def reset(self, **kwargs: Any) -> JSON:
        """Start an episode: ``reset(task_id="miniwob.click-test", seed=7)``.

        Answers ``{"observation", "reward": None, "done": False, "metadata": {"session_id",
        "episode_id"}}``.
        """
        body = dict(kwargs)
        if self.session_id is not None and "session_id" not in body:
            body["session_id"] = self.session_id
        answer = self.client._obj("POST", "/openenv/reset", body=body)
        meta = answer.get("metadata") or {}
        self.session_id = meta.get("session_id")
        self.episode_id = meta.get("episode_id")
        return answer

    def step(self, action_str: str) -> JSON:
        """One BrowserGym action string; ``{"observation", "reward", "done", "metadata"}``.

        Once ``done`` the server has ended the session; the next call must be a reset.
        """
        if self.session_id is None:
            raise SurfgymError(0, "no_session", "no open session: call reset() first")
        answer = self.client._obj(
            "POST",
            "/openenv/step",
            body={"action": {"action_str": action_str}, "session_id": self.session_id},
        )
        if answer.get("done"):
            self.session_id = None
        return answer

    def state(self) -> JSON:
        """The open session's state: ``{"episode_id", "step_count", ...}``."""
        if self.session_id is None:
            raise SurfgymError(0, "no_session", "no open session: call reset() first")
        return self.client._obj("GET", "/openenv/state", params={"session_id": self.session_id})

    def close(self) -> None:
        """End the open session, if any.

        OpenEnv's HTTP protocol has no close route; an OpenEnv session is one of surfgym's
        sessions, so it is ended with ``DELETE /api/sessions/{id}``.
        """
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self.client.close_session(sid)
            except NotFoundError:
                pass

    def __enter__(self) -> OpenEnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ws_url(base_url: str) -> str:
    parts = urllib.parse.urlsplit(base_url.rstrip("/"))
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path + "/openenv/ws", "", ""))


# OpenEnv's WebSocket error codes that have a more specific exception.
_WS_ERRORS: dict[str, type[SurfgymError]] = {"CAPACITY_REACHED": CapacityError}


class OpenEnvWebSocket:
    """OpenEnv's stateful protocol on ``/openenv/ws``: one session per socket.

    Needs the ``websockets`` package (``pip install 'surfgym[openenv]'``), imported only
    here. An ``{"type": "error"}`` answer raises :class:`SurfgymError` with OpenEnv's code
    (``status`` 0; :class:`CapacityError` for ``CAPACITY_REACHED``). Closing the socket
    ends its session.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 120.0,
        *,
        open_timeout: float = 30.0,
        max_message_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        try:
            from websockets.exceptions import InvalidStatus
            from websockets.sync.client import connect
        except ImportError as e:
            raise ImportError(
                "OpenEnvWebSocket needs the websockets package: pip install 'surfgym[openenv]'"
            ) from e
        base = (base_url or os.environ.get("SURFGYM_URL") or DEFAULT_URL).rstrip("/")
        token = os.environ.get("SURFGYM_TOKEN") if token is None else token
        self.url = _ws_url(base)
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            # Screenshots make messages larger than websockets' 1 MiB default.
            self._ws = connect(
                self.url,
                additional_headers=headers,
                open_timeout=open_timeout,
                max_size=max_message_bytes,
            )
        except InvalidStatus as e:
            # Refused before the upgrade (401, 429, ...): the body is surfgym's error JSON.
            raise error_from_response(
                e.response.status_code, bytes(e.response.body or b"")
            ) from None
        except OSError as e:
            raise SurfgymError(0, "unreachable", f"cannot reach {self.url}: {e}") from e
        self._closed = False

    def _call(self, message: JSON) -> JSON:
        if self._closed:
            raise SurfgymError(0, "closed", "this OpenEnv WebSocket is closed")
        self._ws.send(json.dumps(message))
        try:
            raw = self._ws.recv(timeout=self.timeout)
        except TimeoutError as e:
            raise SurfgymError(
                0, "timeout", f"no answer to {message.get('type')!r} within {self.timeout} s"
            ) from e
        answer = json.loads(raw)
        if not isinstance(answer, dict):
            raise SurfgymError(0, "invalid_response", f"unexpected message {raw!r:.200}")
        if answer.get("type") == "error":
            data = answer.get("data") or {}
            code = str(data.get("code") or "EXECUTION_ERROR")
            cls = _WS_ERRORS.get(code, SurfgymError)
            raise cls(0, code, str(data.get("message") or "error"))
        return answer

    def reset(self, **kwargs: Any) -> JSON:
        """Start an episode (``task_id``, ``seed``, ...).

        Answers ``{"observation", "reward", "done", "metadata"}``.
        """
        return self._call({"type": "reset", "data": kwargs}).get("data") or {}

    def step(self, action_str: str) -> JSON:
        """One BrowserGym action string; ``{"observation", "reward", "done", "metadata"}``."""
        return self._call({"type": "step", "data": {"action_str": action_str}}).get("data") or {}

    def state(self) -> JSON:
        """The session's state: ``{"episode_id", "step_count", ...}``."""
        return self._call({"type": "state"}).get("data") or {}

    def close(self) -> None:
        """Say goodbye and close the socket; the server ends the session."""
        if self._closed:
            return
        self._closed = True
        try:
            self._ws.send(json.dumps({"type": "close"}))
        except Exception:  # noqa: BLE001 - the socket may already be gone; closing anyway
            pass
        self._ws.close()

    def __enter__(self) -> OpenEnvWebSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
