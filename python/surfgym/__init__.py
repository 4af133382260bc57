"""surfgym's Python client: the REST API, Gymnasium environments and OpenEnv clients.

    import surfgym
    with surfgym.make("miniwob.click-test") as env:       # a running `surfgym serve`
        obs, info = env.reset(seed=1)
        obs, reward, terminated, truncated, info = env.step("click('3')")

The core (``Client``, ``Env``, ``AsyncClient``, ``AsyncEnv``, ``OpenEnvClient``) needs only
the standard library; Gymnasium (``surfgym[gym]``) makes ``Env`` a ``gymnasium.Env``, and
``OpenEnvWebSocket`` needs ``websockets`` (``surfgym[openenv]``). See docs/guides/python.md.
"""

from __future__ import annotations

from .aio import AsyncClient, AsyncEnv
from .client import DEFAULT_URL, Client
from .env import Env, make
from .errors import CapacityError, ForbiddenError, NotFoundError, ResetNeeded, SurfgymError
from .openenv import OpenEnvClient, OpenEnvWebSocket
from .spaces import ActionText, AnyDict

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "DEFAULT_URL",
    "Client",
    "AsyncClient",
    "Env",
    "AsyncEnv",
    "make",
    "OpenEnvClient",
    "OpenEnvWebSocket",
    "SurfgymError",
    "CapacityError",
    "ForbiddenError",
    "NotFoundError",
    "ResetNeeded",
    "ActionText",
    "AnyDict",
]
