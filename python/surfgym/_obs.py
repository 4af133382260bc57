"""Observation post-processing shared by the sync and async environments.

The server sends screenshots as base64 text (JSON has no bytes). A policy wants bytes
(to hand to an image processor) or, like BrowserGym's, an ``H x W x 3`` array; decoding
here keeps every caller from repeating it.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

# Keys holding base64 images: surfgym's dialect, then BrowserGym's.
IMAGE_KEYS: tuple[str, ...] = ("screenshot", "marked_screenshot", "som_screenshot")


def images_available() -> bool:
    """Whether numpy and Pillow can be imported (needed for ``decode_images=True``)."""
    try:
        import numpy  # noqa: F401
        import PIL.Image  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def require_images() -> None:
    """Fail early, at construction, rather than at the first reset."""
    if not images_available():
        raise ImportError(
            "decode_images=True needs numpy and Pillow: pip install 'surfgym[images]' "
            "(or numpy pillow)"
        )


def _b64(value: str) -> bytes:
    # Tolerate a data URL, should a server send one.
    if value.startswith("data:") and "," in value:
        value = value.split(",", 1)[1]
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"a screenshot is not valid base64: {e}") from e


def _to_array(data: bytes) -> Any:
    import numpy as np
    from PIL import Image  # type: ignore[import-not-found,unused-ignore]

    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"))


def decode_observation(obs: dict[str, Any], decode_images: bool = False) -> dict[str, Any]:
    """A copy of ``obs`` with its screenshots as ``bytes`` (or arrays with ``decode_images``).

    Keys keep their names; an absent or empty screenshot stays as it was (``None``/``""``).
    """
    out = dict(obs)
    for key in IMAGE_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value:
            data = _b64(value)
            out[key] = _to_array(data) if decode_images else data
    return out
