"""The client's own decoding (error bodies, JSON lines, paging, headers) against a stub.

These need no surfgym server and run everywhere; they check only how the client reads
and writes HTTP. What the server does is tested by the other modules, against a real one.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import surfgym
from surfgym._obs import decode_observation

Seen = list[dict[str, Any]]


def _error(kind: str, message: str, fields: list | None = None) -> bytes:
    return json.dumps(
        {"error": {"type": kind, "message": message, "fields": fields or []}}
    ).encode()


# path -> (status, content type, body)
ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/api/sessions/gone/step": (404, "application/json", _error("not_found", "no session `gone`")),
    "/api/sessions/theirs/step": (403, "application/json", _error("forbidden", "another token's")),
    "/api/sessions": (429, "application/json", _error("capacity", "8 sessions open, the most")),
    "/api/tasks/bad": (
        400,
        "application/json",
        _error("invalid_request", "invalid request", [{"field": "rubric", "message": "missing"}]),
    ),
    "/api/broken": (502, "text/html", b"<html>Bad Gateway</html>"),
    "/api/campaigns/c1/export": (
        200,
        "application/x-ndjson",
        b'{"id": "e1", "success": true}\n\n{"id": "e2", "success": false}\n',
    ),
    "/api/campaigns/c1/pause": (200, "application/json", b'{"status": "paused"}'),
}


class _Handler(BaseHTTPRequestHandler):
    seen: Seen

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        self.seen.append(
            {
                "method": self.command,
                "path": url.path,
                "query": parse_qs(url.query),
                "headers": dict(self.headers),
                "body": body,
            }
        )
        if url.path == "/api/tasks":
            # 5 tasks, paged by limit/offset as the server does.
            q = parse_qs(url.query)
            limit, offset = int(q["limit"][0]), int(q.get("offset", ["0"])[0])
            items = [{"id": f"t{i}"} for i in range(5)][offset : offset + min(limit, 2)]
            status, ctype = 200, "application/json"
            payload = json.dumps(
                {"items": items, "total": 5, "limit": limit, "offset": offset}
            ).encode()
        else:
            status, ctype, payload = ROUTES.get(
                url.path, (404, "application/json", _error("no_route", "?"))
            )
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[tuple[surfgym.Client, Seen]]:
    seen: Seen = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield (
            surfgym.Client(f"http://127.0.0.1:{server.server_port}", token="sgt_test", timeout=5),
            seen,
        )
    finally:
        server.shutdown()
        server.server_close()


def test_error_bodies_become_typed_exceptions(stub: tuple[surfgym.Client, Seen]) -> None:
    client, _ = stub
    with pytest.raises(surfgym.NotFoundError) as nf:
        client.step("gone", "click('1')")
    assert (nf.value.status, nf.value.code, nf.value.message) == (
        404,
        "not_found",
        "no session `gone`",
    )
    with pytest.raises(surfgym.ForbiddenError) as fb:
        client.step("theirs", "click('1')")
    assert fb.value.status == 403 and fb.value.code == "forbidden"
    with pytest.raises(surfgym.CapacityError) as cap:
        client.open_session(task_id="miniwob.click-test")
    assert cap.value.status == 429 and cap.value.code == "capacity"
    assert isinstance(cap.value, surfgym.SurfgymError)
    with pytest.raises(surfgym.SurfgymError) as bad:
        client.task("bad")
    assert bad.value.status == 400 and bad.value.fields == [
        {"field": "rubric", "message": "missing"}
    ]
    with pytest.raises(surfgym.SurfgymError) as html:
        client.request("GET", "/api/broken")
    assert html.value.status == 502 and html.value.code == "http_502"
    assert "Bad Gateway" in html.value.message
    assert "HTTP 404 not_found" in str(nf.value)


def test_requests_carry_token_and_json_content_type(stub: tuple[surfgym.Client, Seen]) -> None:
    client, seen = stub
    assert client.pause_campaign("c1") == {"status": "paused"}
    req = seen[-1]
    assert req["method"] == "POST"
    assert req["headers"]["Authorization"] == "Bearer sgt_test"
    assert req["headers"]["Content-Type"] == "application/json"
    assert req["body"] == b"{}"
    with pytest.raises(surfgym.NotFoundError):
        client.step("gone", "click('1')")
    assert json.loads(seen[-1]["body"]) == {"action": "click('1')"}
    with pytest.raises(surfgym.CapacityError):
        client.open_session(task_id="t", seed=3, dialect="browsergym", observe={"ax_tree": True})
    assert json.loads(seen[-1]["body"]) == {
        "task_id": "t",
        "seed": 3,
        "dialect": "browsergym",
        "observe": {"ax_tree": True},
    }
    with pytest.raises(ValueError):
        client.open_session()


def test_export_reads_json_lines_and_lists_page(stub: tuple[surfgym.Client, Seen]) -> None:
    client, seen = stub
    rows = list(client.export("c1", success=True))
    assert [r["id"] for r in rows] == ["e1", "e2"]
    assert seen[-1]["query"] == {"success": ["true"]}
    assert [t["id"] for t in client.tasks(site="shop")] == ["t0", "t1", "t2", "t3", "t4"]
    assert seen[-1]["query"]["site"] == ["shop"]
    assert [t["id"] for t in client.tasks(limit=2)] == ["t0", "t1"]


def test_unreachable_server_is_a_surfgym_error() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = surfgym.Client(f"http://127.0.0.1:{port}", token="", timeout=2)
    with pytest.raises(surfgym.SurfgymError) as err:
        client.health()
    assert err.value.status == 0 and err.value.code == "unreachable"


def test_screenshots_are_decoded_to_bytes() -> None:
    png = b"\x89PNG\r\n\x1a\nrest"
    obs = {"screenshot": base64.b64encode(png).decode(), "som_screenshot": None, "goal": "g"}
    out = decode_observation(obs)
    assert out["screenshot"] == png and out["som_screenshot"] is None and out["goal"] == "g"
    assert obs["screenshot"] != png  # the input is left alone


def test_env_without_a_session_says_reset() -> None:
    env = surfgym.Env("miniwob.click-test", base_url="http://127.0.0.1:9", token="")
    with pytest.raises(surfgym.ResetNeeded, match="reset"):
        env.step("click('1')")
    assert env.action_space.contains('answer("ünïcode")')
    assert env.observation_space.contains({"goal": "x"}) and not env.observation_space.contains("x")
    env.close()  # nothing open: no request
