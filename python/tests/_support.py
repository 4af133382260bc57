"""Helpers shared by the server tests: configuration from the environment, bid lookup."""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Any

import pytest

import surfgym

SERVER_URL = os.environ.get("SURFGYM_URL") or None
TOKEN = os.environ.get("SURFGYM_TOKEN") or None
OTHER_TOKEN = os.environ.get("SURFGYM_OTHER_TOKEN") or None

CLICK_TEST = "miniwob.click-test"

# The harness (tests/it/sessions.rs) checks afterwards that every session the suite ran is
# a finished, judged episode: each one's id goes to this file, one a line.
EPISODES_FILE = os.environ.get("SURFGYM_EPISODES_FILE") or None
_record_lock = threading.Lock()


def record_episode(episode_id: Any) -> None:
    """Note a session's episode for the harness (no-op without SURFGYM_EPISODES_FILE)."""
    if EPISODES_FILE and episode_id:
        with _record_lock, open(EPISODES_FILE, "a", encoding="utf-8") as f:
            f.write(f"{episode_id}\n")


class RecordingClient(surfgym.Client):
    """A client that records the episode of every session it opens (REST or OpenEnv)."""

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = super().request(method, path, **kwargs)
        if (
            method == "POST"
            and path in ("/api/sessions", "/openenv/reset")
            and isinstance(answer, dict)
        ):
            record_episode(
                answer.get("episode_id") or (answer.get("metadata") or {}).get("episode_id")
            )
        return answer


def require_server() -> None:
    """Skip the calling test module unless a real server was named."""
    if not SERVER_URL:
        pytest.skip(
            "SURFGYM_URL is not set: these tests drive a running `surfgym serve` with the "
            "bundled and MiniWoB++ tasks registered (set SURFGYM_URL, SURFGYM_TOKEN, "
            "SURFGYM_OTHER_TOKEN, SURFGYM_MAX_SESSIONS, SURFGYM_SOLVED_TASK)",
            allow_module_level=True,
        )


_LINE = re.compile(r"^\s*\[([^\]]+)\]\s*(.*)$")


def find_bid(obs: dict[str, Any], label: str = "Click Me!", role: str = "button") -> str:
    """The element number of the ``role`` whose line mentions ``label``.

    Looks at BrowserGym's element list (``text``) and accessibility tree (``axtree_txt``)
    and surfgym's ``element_lines``: lines such as ``[3] button "Click Me!"``.
    """
    seen: list[str] = []
    for key in ("text", "axtree_txt", "element_lines", "ax_tree"):
        value = obs.get(key)
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        if not isinstance(value, str):
            continue
        seen.append(f"{key}:\n{value[:1500]}")
        for line in value.splitlines():
            m = _LINE.match(line)
            if m and role in m.group(2).lower() and label.lower() in m.group(2).lower():
                return m.group(1).strip().strip("'\"")
    raise AssertionError(f"no {role} {label!r} in the observation;\n" + "\n".join(seen))


def wait_for_episode(client: surfgym.Client, episode_id: str, secs: float = 15.0) -> dict:
    """The episode once it is no longer pending or running (stored as the session ended)."""
    deadline = time.monotonic() + secs
    while True:
        ep = client.episode(episode_id)
        if ep.get("status") not in ("pending", "running") or time.monotonic() > deadline:
            return ep
        time.sleep(0.1)


def close_quietly(client: surfgym.Client, session_id: str) -> None:
    """End a session a test opened; one already gone is fine."""
    try:
        client.close_session(session_id)
    except surfgym.NotFoundError:
        pass
