"""A Gymnasium environment over one surfgym session at a time.

Written so that BrowserGym code ports by changing one line:
``gym.make("browsergym/miniwob.click-test")`` becomes
``surfgym.make("miniwob.click-test")``; the default dialect is BrowserGym's, so its action
strings and observation keys carry over. The browser runs in the server; each
``reset()`` is a new session, i.e. a new recorded, judged episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._obs import decode_observation, require_images
from .client import Client
from .errors import NotFoundError, ResetNeeded
from .spaces import HAVE_GYMNASIUM, ActionText, AnyDict

__all__ = ["Env", "make"]

if HAVE_GYMNASIUM:
    import gymnasium

    _Base: type = gymnasium.Env
else:
    _Base = object

# The keys `reset(options=...)` understands: one episode's departures from the defaults.
_OPTION_KEYS = frozenset({"task_id", "task", "max_steps", "observe"})


class Env(_Base):  # type: ignore[misc,valid-type,unused-ignore]
    """One surfgym task as a Gymnasium environment (a plain class without Gymnasium).

    ``reset()`` opens a session (closing the previous one), ``step(action)`` sends one
    action string, ``close()`` ends an open session. Observations are the server's JSON
    with screenshots decoded to ``bytes`` (or ``H x W x 3`` arrays with
    ``decode_images=True``, which needs numpy and Pillow). ``info`` carries the server's
    step info plus ``session_id``, ``episode_id``, ``campaign_id`` and ``task_id``; the
    final step's adds ``success``, ``score``, ``end_reason`` and ``verdicts``.
    """

    metadata: dict[str, Any] = {"render_modes": []}

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
        client: Client | None = None,
        decode_images: bool = False,
        max_action_length: int = 4096,
    ) -> None:
        if decode_images:
            require_images()
        self.task_id = task_id
        self.dialect = dialect
        self.seed = seed
        self.max_steps = max_steps
        self.observe = dict(observe) if observe is not None else None
        self.decode_images = decode_images
        self.client = client if client is not None else Client(base_url, token)
        self.action_space = ActionText(max_length=max_action_length)
        self.observation_space = AnyDict()
        self.render_mode = None
        self.session_id: str | None = None
        self.episode_id: str | None = None
        self._ids: dict[str, Any] = {}
        self._ended = False

    def __repr__(self) -> str:
        return f"surfgym.Env({self.task_id!r}, dialect={self.dialect!r}, {self.client!r})"

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a new episode: a fresh session on the task.

        ``seed``: this argument, else the constructor's, else 0 (the environment's seed:
        MiniWoB++ draws its page from it). ``options`` may carry ``task_id`` (or an inline
        ``task``), ``max_steps`` and ``observe`` for this episode only.
        """
        opts = dict(options or {})
        unknown = set(opts) - _OPTION_KEYS
        if unknown:
            raise ValueError(
                f"unknown reset option(s) {sorted(unknown)}; known: {sorted(_OPTION_KEYS)}"
            )
        if HAVE_GYMNASIUM:
            super().reset(seed=seed)
        self._end_open_session()
        chosen = seed if seed is not None else self.seed if self.seed is not None else 0
        task = opts.get("task")
        task_id = None if task is not None else opts.get("task_id", self.task_id)
        answer = self.client.open_session(
            task_id=task_id,
            task=task,
            seed=int(chosen),
            max_steps=opts.get("max_steps", self.max_steps),
            dialect=self.dialect,
            observe=opts.get("observe", self.observe),
        )
        self.session_id = str(answer["session_id"])
        self.episode_id = str(answer["episode_id"])
        self._ended = False
        self._ids = {
            k: answer.get(k) for k in ("session_id", "episode_id", "campaign_id", "task_id")
        }
        info = {**(answer.get("info") or {}), **self._ids}
        return decode_observation(answer["observation"], self.decode_images), info

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Carry out one action; ``(obs, reward, terminated, truncated, info)``.

        Once ``terminated`` or ``truncated`` is true the server has judged and stored the
        episode and forgotten the session: a further step raises :class:`ResetNeeded`.
        """
        if self.session_id is None:
            if self._ended:
                raise ResetNeeded(
                    f"the episode {self.episode_id} has ended (terminated or truncated) and "
                    "its session is gone: call reset() to start a new one"
                )
            raise ResetNeeded("no open session: call reset() before step()")
        if not isinstance(action, str):
            raise TypeError(f"an action is a string such as \"click('12')\", not {action!r}")
        try:
            answer = self.client.step(self.session_id, action)
        except NotFoundError:
            # Reclaimed by the server (idle timeout) or ended elsewhere: nothing to step.
            self.session_id = None
            self._ended = True
            raise
        terminated = bool(answer.get("terminated"))
        truncated = bool(answer.get("truncated"))
        if terminated or truncated:
            self.session_id = None
            self._ended = True
        reward = float(answer.get("reward") or 0.0)
        info = {**(answer.get("info") or {}), **self._ids}
        obs = decode_observation(answer["observation"], self.decode_images)
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        """End the open session, if any (stored and judged as it stands)."""
        self._end_open_session()
        if HAVE_GYMNASIUM:
            super().close()

    def _end_open_session(self) -> None:
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self.client.close_session(sid)
            except NotFoundError:
                pass  # already ended server-side (idle timeout, or closed elsewhere)

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make(task_id: str, **kwargs: Any) -> Env:
    """``surfgym.make("miniwob.click-test")``: BrowserGym's ``gym.make`` for surfgym tasks.

    Keyword arguments are :class:`Env`'s (``base_url``, ``token``, ``dialect``, ``seed``,
    ``max_steps``, ``observe``, ``client``, ``decode_images``). A ``browsergym/`` prefix
    is dropped, so BrowserGym's ids work unchanged.
    """
    if task_id.startswith("browsergym/"):
        task_id = task_id[len("browsergym/") :]
    return Env(task_id, **kwargs)
