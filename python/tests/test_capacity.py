"""The server's session cap (SURFGYM_MAX_SESSIONS) against a running server."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from _support import CLICK_TEST, close_quietly, require_server

import surfgym

require_server()


def _open(client: surfgym.Client, seed: int) -> str:
    answer = client.open_session(
        task_id=CLICK_TEST, seed=seed, dialect="browsergym", observe={"screenshot": False}
    )
    return str(answer["session_id"])


def test_past_the_cap_is_a_capacity_error(client: surfgym.Client) -> None:
    cap = os.environ.get("SURFGYM_MAX_SESSIONS")
    if not cap:
        pytest.skip("SURFGYM_MAX_SESSIONS (the server's --max-sessions) is not set")
    n = int(cap)
    limits = client.session_limits()
    assert limits["max_sessions"] == n, f"the server reports {limits}"
    assert limits["open_on_server"] == 0, f"sessions left open by another test: {limits}"
    opened: list[str] = []
    # All at once: an idle session is reclaimed after --session-idle-secs, so the first
    # opened must still be open when the one past the cap is tried.
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(_open, client, i) for i in range(n)]
        errors = []
        for f in futures:
            try:
                opened.append(f.result())
            except surfgym.SurfgymError as e:
                errors.append(e)
    try:
        assert not errors, f"{len(errors)} of {n} opens under the cap failed: {errors[0]}"
        try:
            opened.append(_open(client, seed=n))
        except surfgym.CapacityError as e:
            assert e.status == 429
            assert e.code == "capacity", e
        else:
            pytest.fail(f"session {n + 1} opened on a server capped at {n}")
    finally:
        for session_id in opened:
            close_quietly(client, session_id)
    # Closing frees the places again.
    close_quietly(client, _open(client, seed=n + 1))
