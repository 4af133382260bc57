"""A blocking client for surfgym's REST API, on the standard library alone.

It is deliberately thin: one method per route, JSON in and out, the server's error body
turned into :class:`SurfgymError`. No connection is kept between calls, so one
:class:`Client` may be shared by many threads (:mod:`surfgym.aio` does exactly that).
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import (
    CapacityError,
    ForbiddenError,
    NotFoundError,
    SurfgymError,
    error_from_response,
)

__all__ = [
    "Client",
    "DEFAULT_URL",
    "SurfgymError",
    "CapacityError",
    "ForbiddenError",
    "NotFoundError",
]

DEFAULT_URL = "http://127.0.0.1:8080"
"""Where ``surfgym serve`` listens by default."""

JSON = dict[str, Any]

# The server refuses pages past 500 items; listing everything walks pages of this size.
_PAGE = 500


def _query_value(value: Any) -> str:
    """A query parameter as the server parses it (``true``, not Python's ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Client:
    """surfgym's REST API: tasks, campaigns, episodes, export and environment sessions.

    ``base_url`` defaults to ``$SURFGYM_URL``, else http://127.0.0.1:8080; ``token`` to
    ``$SURFGYM_TOKEN`` (pass ``token=""`` to send none even when that is set). ``timeout``
    bounds each request in seconds: keep it above the server's step limit
    (``--session-step-secs``, 60 s) so that a slow step answers rather than times out here.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        url = base_url or os.environ.get("SURFGYM_URL") or DEFAULT_URL
        self.base_url = url.rstrip("/")
        self.token = os.environ.get("SURFGYM_TOKEN") if token is None else token
        self.timeout = timeout
        # The campaign of the last session opened here: the caller's interactive campaign,
        # what `export()` reads when given no campaign id.
        self.last_campaign_id: str | None = None

    def __repr__(self) -> str:
        auth = "with a token" if self.token else "without a token"
        return f"Client({self.base_url!r}, {auth})"

    # ---- transport -------------------------------------------------------------------

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        url = self.base_url + path
        if params:
            pairs = [(k, _query_value(v)) for k, v in params.items() if v is not None]
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        return url

    def _open(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        data: bytes | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        """Send one request and return the open response (the caller closes it).

        Every write carries a JSON content type even without a body: the server refuses
        writes without one (415), a guard against cross-site form posts.
        """
        if body is not None:
            data = json.dumps(body).encode("utf-8")
        headers = {"Accept": accept}
        if method in ("POST", "PUT", "PATCH", "DELETE"):
            headers["Content-Type"] = content_type
            if data is None:
                data = b"{}" if method != "DELETE" else b""
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        url = self._url(path, params)
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            with e:
                raise error_from_response(e.code, e.read()) from None
        except urllib.error.URLError as e:
            raise SurfgymError(
                0,
                "unreachable",
                f"cannot reach {self.base_url} ({e.reason}); is `surfgym serve` running there?",
            ) from e
        except TimeoutError as e:
            raise SurfgymError(
                0, "timeout", f"{method} {path} got no answer within {self.timeout} s"
            ) from e
        except (ConnectionError, http.client.HTTPException) as e:
            raise SurfgymError(
                0, "connection", f"{method} {path}: the connection broke ({e!r})"
            ) from e

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        data: bytes | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request to ``path`` (``/api/...``); the decoded JSON answer, or ``None``.

        Public so that routes this client has no method for stay one line away.
        """
        resp = self._open(
            method, path, params=params, body=body, data=data, content_type=content_type
        )
        try:
            with resp:
                raw = resp.read()
        except TimeoutError as e:
            raise SurfgymError(
                0, "timeout", f"{method} {path} got no answer within {self.timeout} s"
            ) from e
        except (ConnectionError, http.client.HTTPException) as e:
            raise SurfgymError(
                0, "connection", f"{method} {path}: the connection broke ({e!r})"
            ) from e
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise SurfgymError(
                resp.status, "invalid_response", f"{method} {path} answered non-JSON: {raw[:200]!r}"
            ) from e

    def _obj(self, method: str, path: str, **kwargs: Any) -> JSON:
        """A request whose answer is a JSON object (every route but the lists and 204s)."""
        answer = self.request(method, path, **kwargs)
        if not isinstance(answer, dict):
            raise SurfgymError(
                0, "invalid_response", f"{method} {path} answered {answer!r:.200}, not an object"
            )
        return answer

    def _pages(self, path: str, params: Mapping[str, Any]) -> list[JSON]:
        """Every item of a paged list, or one page when the caller named ``limit``."""
        if params.get("limit") is not None:
            return list(self.request("GET", path, params=params)["items"])
        items: list[JSON] = []
        offset = int(params.get("offset") or 0)
        while True:
            page = self.request("GET", path, params={**params, "limit": _PAGE, "offset": offset})
            batch = page["items"]
            items.extend(batch)
            offset += len(batch)
            if not batch or offset >= int(page.get("total", 0)):
                return items

    # ---- health ----------------------------------------------------------------------

    def health(self) -> JSON:
        """``GET /api/health``: ``{"status": "ok"}`` when the server is up."""
        return self._obj("GET", "/api/health")

    # ---- tasks -----------------------------------------------------------------------

    def tasks(self, **filters: Any) -> list[JSON]:
        """Registered tasks; filters ``site``, ``tag``, ``difficulty``, ``split``.

        Without ``limit`` every matching task is returned (page after page); with it,
        that one page (``offset`` too).
        """
        return self._pages("/api/tasks", filters)

    def task(self, task_id: str) -> JSON:
        """One task; its full spec (rubric, ``reference_solution``, ...) is under ``spec``."""
        return self._obj("GET", f"/api/tasks/{urllib.parse.quote(task_id, safe='')}")

    def create_task(self, spec: Mapping[str, Any]) -> JSON:
        """Register a task (the JSON of docs/reference/formats.md); the stored task."""
        return self._obj("POST", "/api/tasks", body=dict(spec))

    def delete_task(self, task_id: str) -> None:
        """Delete a task; its episodes stay."""
        self.request("DELETE", f"/api/tasks/{urllib.parse.quote(task_id, safe='')}")

    def import_tasks(
        self,
        text: str | bytes,
        format: str | None = None,
        *,
        replace: bool | None = None,
        bases: Mapping[str, str] | str | None = None,
        split: str | None = None,
    ) -> JSON:
        """Import a task file (JSON Lines, a JSON array, WebArena configs, MiniWoB++ names).

        ``format`` is ``surfgym``, ``webvoyager``, ``webarena``, ``webgym`` or ``miniwob``;
        ``bases`` fills URL placeholders (``{"MINIWOB": "http://..."}``). Answers the
        per-line report.
        """
        if isinstance(bases, Mapping):
            bases = ",".join(f"{k}={v}" for k, v in bases.items())
        data = text.encode("utf-8") if isinstance(text, str) else text
        params = {"format": format, "replace": replace, "bases": bases, "split": split}
        return self._obj(
            "POST",
            "/api/tasks/import",
            params=params,
            data=data,
            content_type="application/x-ndjson",
        )

    # ---- campaigns -------------------------------------------------------------------

    def create_campaign(self, **spec: Any) -> JSON:
        """Create a campaign (``policy``, ``tasks``, ``rollouts_per_task``, ...).

        Answers ``{"id", "status": "queued", "url"}``; a running server runs it.
        """
        return self._obj("POST", "/api/campaigns", body=spec)

    def campaigns(self, **params: Any) -> list[JSON]:
        """Campaigns, newest first; every one, or one page with ``limit`` / ``offset``."""
        return self._pages("/api/campaigns", params)

    def campaign(self, campaign_id: str) -> JSON:
        """One campaign: counts, success rate, progress."""
        return self._obj("GET", f"/api/campaigns/{campaign_id}")

    def pause_campaign(self, campaign_id: str) -> JSON:
        """Stop starting episodes; running ones finish."""
        return self._obj("POST", f"/api/campaigns/{campaign_id}/pause")

    def resume_campaign(self, campaign_id: str) -> JSON:
        """Queue a paused campaign again."""
        return self._obj("POST", f"/api/campaigns/{campaign_id}/resume")

    def cancel_campaign(self, campaign_id: str) -> JSON:
        """Cancel: episodes not started end ``cancelled``."""
        return self._obj("POST", f"/api/campaigns/{campaign_id}/cancel")

    def export(self, campaign_id: str | None = None, **params: Any) -> Iterator[JSON]:
        """A campaign's finished, judged episodes, one dict per JSON line, as they arrive.

        Filters ``split``, ``success``. Without ``campaign_id``: the campaign of the last
        session this client opened, i.e. the caller's interactive campaign, where every
        session's episode is recorded.
        """
        cid = campaign_id or self.last_campaign_id
        if cid is None:
            raise ValueError(
                "export() needs a campaign id (or a session opened by this client first, "
                "whose interactive campaign it then exports)"
            )
        resp = self._open(
            "GET", f"/api/campaigns/{cid}/export", params=params, accept="application/x-ndjson"
        )

        def lines() -> Iterator[JSON]:
            with resp:
                for line in resp:
                    if line.strip():
                        yield json.loads(line)

        return lines()

    # ---- episodes --------------------------------------------------------------------

    def episodes(self, **filters: Any) -> list[JSON]:
        """Episodes; filters ``campaign``, ``task``, ``status``, ``success``, ``split``."""
        return self._pages("/api/episodes", filters)

    def episode(self, episode_id: str) -> JSON:
        """One episode: ``success``, ``score``, ``step_count``, its ``steps``, ``verdicts``."""
        return self._obj("GET", f"/api/episodes/{episode_id}")

    # ---- environment sessions (docs/reference/sessions.md) ---------------------------

    def open_session(
        self,
        task_id: str | None = None,
        task: Mapping[str, Any] | None = None,
        seed: int = 0,
        max_steps: int | None = None,
        dialect: str = "surfgym",
        observe: Mapping[str, Any] | None = None,
    ) -> JSON:
        """Open a session on a registered task (``task_id``) or an inline one (``task``).

        Answers ``{"session_id", "episode_id", "campaign_id", "task_id", "observation",
        "info"}``. A full server raises :class:`CapacityError`.
        """
        if (task_id is None) == (task is None):
            raise ValueError("open_session takes exactly one of task_id and task")
        body: JSON = {"seed": seed, "dialect": dialect}
        if task_id is not None:
            body["task_id"] = task_id
        else:
            body["task"] = dict(task or {})
        if max_steps is not None:
            body["max_steps"] = max_steps
        if observe is not None:
            body["observe"] = dict(observe)
        answer = self._obj("POST", "/api/sessions", body=body)
        if answer.get("campaign_id"):
            self.last_campaign_id = str(answer["campaign_id"])
        return answer

    def step(self, session_id: str, action: str) -> JSON:
        """One action: ``{"observation", "reward", "terminated", "truncated", "info"}``.

        A bad action is not an exception: its error is in ``observation.last_action_error``
        and ``info.action_error``.
        """
        return self._obj("POST", f"/api/sessions/{session_id}/step", body={"action": action})

    def session_state(self, session_id: str) -> JSON:
        """A session's state (steps, limits, timings)."""
        return self._obj("GET", f"/api/sessions/{session_id}")

    def close_session(self, session_id: str) -> JSON | None:
        """End a session now (stored and judged as it stands); the final info."""
        answer = self.request("DELETE", f"/api/sessions/{session_id}")
        return answer if isinstance(answer, dict) else None

    def sessions(self) -> list[JSON]:
        """The caller's open sessions (``session_id``, ``episode_id``, ``step_count``, ...)."""
        answer = self.request("GET", "/api/sessions")
        if isinstance(answer, dict):
            for key in ("items", "sessions"):
                if isinstance(answer.get(key), list):
                    return list(answer[key])
        return list(answer or [])

    def session_limits(self) -> JSON:
        """The server's session limits, and how many sessions are open on it.

        ``{"max_sessions", "sessions_per_token", "idle_secs", "step_secs",
        "open_on_server"}``: size a rollout pool to these rather than to a 429.
        """
        answer = self.request("GET", "/api/sessions")
        limits = dict(answer.get("limits") or {}) if isinstance(answer, dict) else {}
        if isinstance(answer, dict) and "open_on_server" in answer:
            limits["open_on_server"] = answer["open_on_server"]
        return limits
