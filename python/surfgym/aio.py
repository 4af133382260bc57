"""asyncio versions of :class:`Client` and :class:`Env`, for many sessions at once.

A rollout worker drives tens of sessions, each mostly waiting on the server (a step is
a browser action and a page settling). The blocking calls run on a dedicated thread pool
(``max_concurrency`` threads) through ``loop.run_in_executor``: no dependency beyond the
standard library, and the same code path, errors included, as the blocking client.

    client = AsyncClient(max_concurrency=32)
    envs = [AsyncEnv("miniwob.click-test", client=client) for _ in range(16)]
    results = await asyncio.gather(*(env.reset(seed=i) for i, env in enumerate(envs)))
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .client import Client
from .env import Env

__all__ = ["AsyncClient", "AsyncEnv"]

T = TypeVar("T")
JSON = dict[str, Any]

_DONE = object()


class AsyncClient:
    """:class:`Client`'s methods as coroutines, run on a thread pool of its own.

    At most ``max_concurrency`` requests are in flight; more wait their turn in the pool.
    Close it (``await client.aclose()`` or ``async with``) to stop its threads.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 120.0,
        *,
        max_concurrency: int = 32,
        client: Client | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.sync = client if client is not None else Client(base_url, token, timeout)
        self.max_concurrency = max_concurrency
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="surfgym")

    def __repr__(self) -> str:
        return f"AsyncClient({self.sync!r}, max_concurrency={self.max_concurrency})"

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call on this client's pool (how every method here is made)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    async def aclose(self) -> None:
        """Stop the pool's threads once their calls return."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """As :meth:`aclose`, from synchronous code."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- the REST API, as in Client ------------------------------------------------

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return await self.run(self.sync.request, method, path, **kwargs)

    async def health(self) -> JSON:
        return await self.run(self.sync.health)

    async def tasks(self, **filters: Any) -> list[JSON]:
        return await self.run(self.sync.tasks, **filters)

    async def task(self, task_id: str) -> JSON:
        return await self.run(self.sync.task, task_id)

    async def create_task(self, spec: Mapping[str, Any]) -> JSON:
        return await self.run(self.sync.create_task, spec)

    async def delete_task(self, task_id: str) -> None:
        await self.run(self.sync.delete_task, task_id)

    async def import_tasks(self, text: str | bytes, format: str | None = None, **kw: Any) -> JSON:
        return await self.run(self.sync.import_tasks, text, format, **kw)

    async def create_campaign(self, **spec: Any) -> JSON:
        return await self.run(self.sync.create_campaign, **spec)

    async def campaigns(self, **params: Any) -> list[JSON]:
        return await self.run(self.sync.campaigns, **params)

    async def campaign(self, campaign_id: str) -> JSON:
        return await self.run(self.sync.campaign, campaign_id)

    async def pause_campaign(self, campaign_id: str) -> JSON:
        return await self.run(self.sync.pause_campaign, campaign_id)

    async def resume_campaign(self, campaign_id: str) -> JSON:
        return await self.run(self.sync.resume_campaign, campaign_id)

    async def cancel_campaign(self, campaign_id: str) -> JSON:
        return await self.run(self.sync.cancel_campaign, campaign_id)

    async def export(self, campaign_id: str | None = None, **params: Any) -> AsyncIterator[JSON]:
        """The export's episodes one by one; each line is read on the pool."""
        lines = await self.run(self.sync.export, campaign_id, **params)
        while True:
            item = await self.run(next, lines, _DONE)
            if item is _DONE:
                return
            yield item

    async def episodes(self, **filters: Any) -> list[JSON]:
        return await self.run(self.sync.episodes, **filters)

    async def episode(self, episode_id: str) -> JSON:
        return await self.run(self.sync.episode, episode_id)

    async def open_session(
        self,
        task_id: str | None = None,
        task: Mapping[str, Any] | None = None,
        seed: int = 0,
        max_steps: int | None = None,
        dialect: str = "surfgym",
        observe: Mapping[str, Any] | None = None,
    ) -> JSON:
        return await self.run(
            self.sync.open_session, task_id, task, seed, max_steps, dialect, observe
        )

    async def step(self, session_id: str, action: str) -> JSON:
        return await self.run(self.sync.step, session_id, action)

    async def session_state(self, session_id: str) -> JSON:
        return await self.run(self.sync.session_state, session_id)

    async def close_session(self, session_id: str) -> JSON | None:
        return await self.run(self.sync.close_session, session_id)

    async def sessions(self) -> list[JSON]:
        return await self.run(self.sync.sessions)

    async def session_limits(self) -> JSON:
        return await self.run(self.sync.session_limits)


class AsyncEnv:
    """:class:`Env` with ``reset``, ``step`` and ``close`` as coroutines.

    Environments that share one :class:`AsyncClient` share its thread pool, which bounds
    how many requests are in flight; without ``client`` each makes its own. Calls on one
    environment must not overlap (a session steps one action at a time; the server answers
    409 otherwise); calls on different environments run concurrently.
    """

    def __init__(
        self,
        task_id: str,
        *,
        base_url: str | None = None,
        token: str | None = None,
        dialect: str = "browsergym",
        seed: int | None = None,
        max_steps: int | None = None,
        observe: Mapping[str, Any] | None = None,
        client: AsyncClient | None = None,
        decode_images: bool = False,
        max_concurrency: int = 32,
    ) -> None:
        self._owns_client = client is None
        self._closed = False
        self.client = (
            client
            if client is not None
            else AsyncClient(base_url, token, max_concurrency=max_concurrency)
        )
        self.env = Env(
            task_id,
            dialect=dialect,
            seed=seed,
            max_steps=max_steps,
            observe=observe,
            client=self.client.sync,
            decode_images=decode_images,
        )

    def __repr__(self) -> str:
        return f"surfgym.AsyncEnv({self.env.task_id!r}, dialect={self.env.dialect!r})"

    @property
    def session_id(self) -> str | None:
        return self.env.session_id

    @property
    def episode_id(self) -> str | None:
        return self.env.episode_id

    @property
    def action_space(self) -> Any:
        return self.env.action_space

    @property
    def observation_space(self) -> Any:
        return self.env.observation_space

    async def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """As :meth:`Env.reset`."""
        return await self.client.run(self.env.reset, seed, options)

    async def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """As :meth:`Env.step`."""
        return await self.client.run(self.env.step, action)

    async def close(self) -> None:
        """End the open session; stop the pool too when this environment made it.

        Idempotent: closing twice is harmless.
        """
        if self._closed:
            return
        try:
            await self.client.run(self.env.close)
        finally:
            if self._owns_client:
                self._closed = True
                await self.client.aclose()

    async def __aenter__(self) -> AsyncEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
