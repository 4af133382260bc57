"""Many sessions at once through `AsyncEnv` against a running server."""

from __future__ import annotations

import asyncio
import os

import pytest
from _support import CLICK_TEST, SERVER_URL, TOKEN, RecordingClient, find_bid, require_server

import surfgym
from surfgym.aio import AsyncClient, AsyncEnv

require_server()

N = 16


def test_sixteen_sessions_at_once() -> None:
    cap = os.environ.get("SURFGYM_MAX_SESSIONS")
    if cap and int(cap) < N:
        pytest.fail(f"SURFGYM_MAX_SESSIONS={cap}: this test opens {N} sessions at once")

    async def run() -> None:
        recording = RecordingClient(SERVER_URL, TOKEN or "")
        async with AsyncClient(client=recording, max_concurrency=N) as client:
            envs = [
                AsyncEnv(CLICK_TEST, client=client, observe={"screenshot": False}) for _ in range(N)
            ]
            try:
                # return_exceptions: every reset has finished (and its session is known to
                # its env, to be closed below) before any failure is reported.
                resets = await asyncio.gather(
                    *(env.reset(seed=i) for i, env in enumerate(envs)), return_exceptions=True
                )
                failed = [r for r in resets if isinstance(r, BaseException)]
                assert not failed, f"{len(failed)} of {N} resets failed: {failed[0]!r}"
                sessions = {info["session_id"] for _, info in resets}  # type: ignore[misc]
                assert len(sessions) == N
                steps = await asyncio.gather(
                    *(
                        env.step(f"click('{find_bid(obs)}')")
                        for env, (obs, _) in zip(envs, resets, strict=True)  # type: ignore[misc]
                    ),
                    return_exceptions=True,
                )
                failed = [s for s in steps if isinstance(s, BaseException)]
                assert not failed, f"{len(failed)} of {N} steps failed: {failed[0]!r}"
                rewards = [s[1] for s in steps]  # type: ignore[index]
                assert rewards == [1.0] * N
                assert all(s[2] for s in steps), "an episode did not terminate"  # type: ignore[index]
                assert all(env.session_id is None for env in envs)
            finally:
                await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)

    asyncio.run(run())


def test_async_client_errors_are_the_sync_ones() -> None:
    async def run() -> None:
        async with AsyncClient(SERVER_URL, TOKEN or "") as client:
            with pytest.raises(surfgym.NotFoundError):
                await client.task("no-such-task-surfgym-python-test")

    asyncio.run(run())
