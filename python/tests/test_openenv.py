"""The OpenEnv routes, over HTTP and over the WebSocket, against a running server."""

from __future__ import annotations

import pytest
from _support import CLICK_TEST, SERVER_URL, TOKEN, find_bid, record_episode, require_server

import surfgym
from surfgym import OpenEnvClient, OpenEnvWebSocket

require_server()

OPENENV_CODES = {
    "INVALID_JSON",
    "UNKNOWN_TYPE",
    "VALIDATION_ERROR",
    "EXECUTION_ERROR",
    "CAPACITY_REACHED",
}


def test_openenv_over_http(client: surfgym.Client) -> None:
    env = OpenEnvClient(client=client)
    try:
        env.health()
        first = env.reset(task_id=CLICK_TEST, seed=6)
        assert first["done"] is False
        assert first["reward"] is None
        session_id = first["metadata"]["session_id"]
        assert env.session_id == session_id
        bid = find_bid(first["observation"])

        missed = env.step("click('99999')")
        assert missed["done"] is False
        assert missed["observation"]["last_action_error"]
        state = env.state()
        assert state["step_count"] == 1
        assert state["episode_id"] == first["metadata"]["episode_id"]

        won = env.step(f"click('{bid}')")
        assert won["done"] is True
        assert won["reward"] == 1.0
        # The session ended with the episode.
        with pytest.raises(surfgym.NotFoundError):
            client.session_state(session_id)
    finally:
        env.close()


def test_openenv_reset_ends_the_previous_session(client: surfgym.Client) -> None:
    env = OpenEnvClient(client=client)
    try:
        first = env.reset(task_id=CLICK_TEST, seed=7)["metadata"]["session_id"]
        second = env.reset(task_id=CLICK_TEST, seed=8)["metadata"]["session_id"]
        assert second != first
        with pytest.raises(surfgym.NotFoundError):
            client.session_state(first)
        client.session_state(second)
    finally:
        env.close()


def test_openenv_over_websocket() -> None:
    pytest.importorskip("websockets", reason="OpenEnvWebSocket needs websockets")
    with OpenEnvWebSocket(SERVER_URL, TOKEN or "") as env:
        first = env.reset(task_id=CLICK_TEST, seed=9)
        record_episode(first["metadata"]["episode_id"])
        assert first["done"] is False
        bid = find_bid(first["observation"])

        missed = env.step("click('99999')")
        assert missed["done"] is False
        assert missed["observation"]["last_action_error"]
        state = env.state()
        assert state["step_count"] == 1
        assert state["episode_id"] == first["metadata"]["episode_id"]

        won = env.step(f"click('{bid}')")
        assert won["done"] is True
        assert won["reward"] == 1.0


def test_openenv_websocket_error_message_raises() -> None:
    pytest.importorskip("websockets", reason="OpenEnvWebSocket needs websockets")
    with OpenEnvWebSocket(SERVER_URL, TOKEN or "") as env:
        with pytest.raises(surfgym.SurfgymError) as err:
            env.reset(task_id="no-such-task-surfgym-python-test", seed=0)
        assert err.value.code in OPENENV_CODES, err.value
        assert err.value.message
