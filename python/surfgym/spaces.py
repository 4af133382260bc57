"""The two spaces a surfgym environment declares.

Actions are free text (``click('12')``, ``answer("350 ml")``) and observations free-form
JSON objects, neither of which Gymnasium's stock spaces describe: ``Text`` only accepts
its charset (alphanumerics by default) and ``Dict`` needs every key's space up front. These
subclasses say what is really accepted, so ``space.contains`` and Gymnasium's checks work.
Without Gymnasium installed, plain classes with the same methods stand in.
"""

from __future__ import annotations

import string
from typing import Any

__all__ = ["ActionText", "AnyDict", "HAVE_GYMNASIUM"]

try:
    import gymnasium
    from gymnasium import spaces as _gs

    HAVE_GYMNASIUM = True
except ImportError:  # the core client needs no Gymnasium
    gymnasium = None  # type: ignore[assignment]
    _gs = None  # type: ignore[assignment]
    HAVE_GYMNASIUM = False


if HAVE_GYMNASIUM:

    class ActionText(_gs.Text):
        """Any action string of 1 to ``max_length`` characters (any characters)."""

        def __init__(self, max_length: int = 4096, *, seed: int | None = None) -> None:
            super().__init__(
                max_length=max_length, min_length=1, charset=string.printable, seed=seed
            )

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def __repr__(self) -> str:
            return f"ActionText(max_length={self.max_length})"

    class AnyDict(gymnasium.Space[dict[str, Any]]):
        """Any dict: the JSON observation, whose keys depend on the dialect and ``observe``."""

        def __init__(self, seed: int | None = None) -> None:
            super().__init__(shape=None, dtype=None, seed=seed)

        @property
        def is_np_flattenable(self) -> bool:
            return False

        def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
            return {}

        def contains(self, x: Any) -> bool:
            return isinstance(x, dict)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, AnyDict)

        def __hash__(self) -> int:
            return hash("surfgym.AnyDict")

        def __repr__(self) -> str:
            return "AnyDict()"

else:

    class ActionText:  # type: ignore[no-redef]
        """Any action string of 1 to ``max_length`` characters."""

        def __init__(self, max_length: int = 4096, *, seed: int | None = None) -> None:
            self.min_length = 1
            self.max_length = max_length

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def __contains__(self, x: Any) -> bool:
            return self.contains(x)

        def sample(self) -> str:
            return "noop()"

        def __repr__(self) -> str:
            return f"ActionText(max_length={self.max_length})"

    class AnyDict:  # type: ignore[no-redef]
        """Any dict: the JSON observation."""

        def contains(self, x: Any) -> bool:
            return isinstance(x, dict)

        def __contains__(self, x: Any) -> bool:
            return self.contains(x)

        def sample(self) -> dict[str, Any]:
            return {}

        def __repr__(self) -> str:
            return "AnyDict()"
