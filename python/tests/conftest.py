"""Fixtures for the server tests (configured from SURFGYM_* environment variables)."""

from __future__ import annotations

import pytest
from _support import OTHER_TOKEN, SERVER_URL, TOKEN, RecordingClient

import surfgym


@pytest.fixture
def base_url() -> str:
    assert SERVER_URL, "SURFGYM_URL is not set"
    return SERVER_URL


@pytest.fixture
def token() -> str | None:
    return TOKEN


@pytest.fixture
def client(base_url: str) -> surfgym.Client:
    """A client on SURFGYM_TOKEN (or no token, when it is unset)."""
    return RecordingClient(base_url, token=TOKEN or "")


@pytest.fixture
def other_client(base_url: str) -> surfgym.Client:
    """A client on SURFGYM_OTHER_TOKEN: another caller."""
    if not TOKEN or not OTHER_TOKEN or OTHER_TOKEN == TOKEN:
        pytest.skip("needs two different tokens: SURFGYM_TOKEN and SURFGYM_OTHER_TOKEN")
    return RecordingClient(base_url, token=OTHER_TOKEN)
