"""Sessions through `Client` and `Env` against a running server."""

from __future__ import annotations

import os

import pytest
from _support import CLICK_TEST, close_quietly, find_bid, require_server, wait_for_episode

import surfgym

require_server()


def _solved_task_id(client: surfgym.Client) -> str:
    """SURFGYM_SOLVED_TASK, else the first bundled task that has a reference solution."""
    named = os.environ.get("SURFGYM_SOLVED_TASK")
    if named:
        return named
    for task in client.tasks(tag="bundled"):
        if (task.get("spec") or {}).get("reference_solution"):
            return str(task["id"])
    pytest.fail("SURFGYM_SOLVED_TASK is unset and no bundled task has a reference solution")


def _solution(task: dict) -> list[str]:
    spec = task.get("spec") or {}
    solution = spec.get("reference_solution") or task.get("reference_solution")
    assert solution, f"task {task.get('id')} has no reference_solution: {sorted(spec)}"
    return list(solution)


def test_bundled_task_solved_by_its_reference_solution(client: surfgym.Client) -> None:
    task_id = _solved_task_id(client)
    solution = _solution(client.task(task_id))
    env = surfgym.Env(task_id, client=client, dialect="surfgym", observe={"screenshot": False})
    try:
        obs, reset_info = env.reset(seed=0)
        assert reset_info["step"] == 0
        assert reset_info["dialect"] == "surfgym"
        assert reset_info["task_id"] == task_id
        assert obs.get("instruction"), f"no instruction in the first observation: {sorted(obs)}"
        assert isinstance(obs.get("elements"), list) and obs["elements"], "no elements"
        for i, action in enumerate(solution):
            obs, reward, terminated, truncated, info = env.step(action)
            assert not info.get("action_error"), f"step {i} `{action}`: {info['action_error']}"
            assert not obs.get("last_action_error"), f"step {i}: {obs['last_action_error']}"
            last = i == len(solution) - 1
            assert terminated is last, f"step {i} `{action}`: terminated={terminated}"
            assert truncated is False
        assert info["success"] is True, info
        assert reward == 1.0
        assert info["step"] == len(solution)
        assert info["episode_id"] == reset_info["episode_id"]
        with pytest.raises(surfgym.ResetNeeded, match="reset"):
            env.step("stop()")

        episode = wait_for_episode(client, reset_info["episode_id"])
        assert episode["id"] == reset_info["episode_id"]
        assert episode["task_id"] == task_id
        assert episode["status"] == "finished"
        assert episode["success"] is True
        assert episode["step_count"] == len(solution)
        assert episode["campaign_id"] == reset_info["campaign_id"]
    finally:
        env.close()


def test_miniwob_click_test_in_browsergym_dialect(client: surfgym.Client) -> None:
    # BrowserGym's id, as `gym.make` takes it: the prefix is dropped.
    with surfgym.make("browsergym/" + CLICK_TEST, client=client) as env:
        obs, info = env.reset(seed=1)
        assert env.observation_space.contains(obs)
        assert obs["goal"], "no goal in the observation"
        assert obs["goal_object"][0]["type"] == "text"
        assert obs["last_action_error"] == ""
        shot = obs["screenshot"]
        assert isinstance(shot, bytes), "the screenshot was not decoded from base64"
        assert shot[:2] == b"\xff\xd8" or shot[:4] == b"\x89PNG", shot[:8]

        bid = find_bid(obs)
        action = f"click('{bid}')"
        assert env.action_space.contains(action)
        obs, reward, terminated, truncated, info = env.step(action)
        assert terminated is True and truncated is False, info
        assert reward == 1.0
        assert info["success"] is True
        session_id = info["session_id"]
        # The session is gone server-side, and the env says to reset.
        with pytest.raises(surfgym.NotFoundError):
            client.session_state(session_id)
        with pytest.raises(surfgym.ResetNeeded, match="reset"):
            env.step(action)
        # A new episode on the same env.
        obs, info = env.reset(seed=2)
        assert info["session_id"] != session_id
        assert env.step(f"click('{find_bid(obs)}')")[1] == 1.0


def test_bad_actions_are_observations_not_failures(client: surfgym.Client) -> None:
    env = surfgym.Env(CLICK_TEST, client=client, observe={"screenshot": False})
    try:
        obs, info = env.reset(seed=3)
        session_id = info["session_id"]
        assert session_id in {s.get("session_id") or s.get("id") for s in client.sessions()}
        bid = find_bid(obs)
        for n, bad in enumerate(["click('999')", "fly()"], start=1):
            obs, reward, terminated, truncated, info = env.step(bad)
            assert obs["last_action_error"], f"`{bad}` gave no last_action_error"
            assert info["action_error"], f"`{bad}` gave no info.action_error"
            assert not terminated and not truncated
            assert reward == 0.0
            assert info["step"] == n
        obs, reward, terminated, truncated, info = env.step(f"click('{bid}')")
        assert obs["last_action_error"] == ""
        assert terminated is True and reward == 1.0
        assert info["step"] == 3
    finally:
        env.close()


def test_another_tokens_session_is_forbidden(
    client: surfgym.Client, other_client: surfgym.Client
) -> None:
    opened = client.open_session(task_id=CLICK_TEST, dialect="browsergym", seed=4)
    session_id = opened["session_id"]
    try:
        with pytest.raises(surfgym.ForbiddenError) as err:
            other_client.step(session_id, "click('999')")
        assert err.value.status == 403
        assert err.value.code == "forbidden", err.value
        with pytest.raises(surfgym.ForbiddenError):
            other_client.close_session(session_id)
        # Still open, and still its owner's.
        answer = client.step(session_id, "click('999')")
        assert answer["terminated"] is False
        assert answer["info"]["step"] == 1
    finally:
        close_quietly(client, session_id)


def test_closing_a_session_ends_it(client: surfgym.Client) -> None:
    opened = client.open_session(task_id=CLICK_TEST, dialect="browsergym", seed=5)
    session_id = opened["session_id"]
    try:
        assert opened["info"]["step"] == 0
        client.session_state(session_id)
        client.close_session(session_id)
        with pytest.raises(surfgym.NotFoundError) as err:
            client.step(session_id, "click('1')")
        assert err.value.code == "not_found"
        episode = wait_for_episode(client, opened["episode_id"])
        assert episode["end_reason"] == "stopped"
    finally:
        close_quietly(client, session_id)
