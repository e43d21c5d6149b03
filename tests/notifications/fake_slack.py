"""A fake Slack on 127.0.0.1: the Web API methods Stateroom calls, and Slack's side of a click.

`FakeSlack` answers `chat.postMessage`, `chat.update` and `views.open` as Slack
does (a bearer token is checked; `{"ok": true, "channel", "ts"}` or
`{"ok": true, "view": {...}}`; `{"ok": false, "error": ...}` otherwise) and
records every call (an opened modal in `views`); `response/<n>` takes what an app
posts to a click's `response_url`. `click()` and `submit()` (a modal's
`view_submission`) send an interaction to Stateroom the way Slack does:
form-encoded `payload=<json>`, signed with `X-Slack-Request-Timestamp` and
`X-Slack-Signature` ("v0=" + HMAC-SHA256 of "v0:{timestamp}:{body}").
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx


class FakeSlack:
    def __init__(self, *, token: str, signing_secret: str) -> None:
        self.token = token
        self.signing_secret = signing_secret
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.responses: list[dict[str, Any]] = []
        self.views: list[dict[str, Any]] = []  # the modals opened, as Slack holds them
        # The next Web API answers to give instead (status, body), e.g. (429, {...}).
        self.fail_next: list[tuple[int, dict[str, Any]]] = []
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    @property
    def api_url(self) -> str:
        return self.base + "api/"

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == method]

    # --- the Web API ---------------------------------------------------------
    def api(self, method: str, auth: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append((method, args))
            if self.fail_next:
                return self.fail_next.pop(0)
            if auth != f"Bearer {self.token}":
                return 200, {"ok": False, "error": "invalid_auth"}
            if method == "chat.postMessage":
                channel = args["channel"]
                if channel.startswith("C404"):
                    return 200, {"ok": False, "error": "channel_not_found"}
                # A DM to a user id lands in the bot's IM channel with them.
                where = "D" + channel[1:] if channel.startswith("U") else channel
                ts = f"{int(time.time())}.{next(self._ts):06d}"
                self.messages[(where, ts)] = {"text": args.get("text"), "blocks": args["blocks"]}
                return 200, {"ok": True, "channel": where, "ts": ts, "message": args}
            if method == "chat.update":
                key = (args["channel"], args["ts"])
                if key not in self.messages:
                    return 200, {"ok": False, "error": "message_not_found"}
                self.messages[key] = {"text": args.get("text"), "blocks": args.get("blocks")}
                return 200, {"ok": True, "channel": key[0], "ts": key[1]}
            if method == "views.open":
                return self._open_view(args)
            return 200, {"ok": False, "error": "unknown_method"}

    def _open_view(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        view = args.get("view")
        if not args.get("trigger_id") or not isinstance(view, dict):
            return 200, {"ok": False, "error": "invalid_arguments"}
        if view.get("type") != "modal" or len(view.get("private_metadata", "")) > 3000:
            return 200, {"ok": False, "error": "invalid_arguments"}
        # Slack gives every block a block_id, and the view an id and a state.
        blocks = [
            {"block_id": f"blk{n}", **block} for n, block in enumerate(view.get("blocks", []))
        ]
        held = {**view, "id": f"V{len(self.views) + 1}", "blocks": blocks, "state": {"values": {}}}
        self.views.append(held)
        return 200, {"ok": True, "view": held}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    args = json.loads(raw or b"{}")
                else:
                    args = dict(parse_qsl(raw.decode()))
                    if isinstance(args.get("blocks"), str):
                        args["blocks"] = json.loads(args["blocks"])
                if self.path.startswith("/response/"):
                    with fake._lock:
                        fake.responses.append(args)
                    status, body = 200, {"ok": True}
                elif self.path.startswith("/api/"):
                    method = self.path.removeprefix("/api/").split("?")[0]
                    status, body = fake.api(method, self.headers.get("Authorization", ""), args)
                else:
                    status, body = 404, {"ok": False}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        return Handler

    # --- Slack's side of a click -----------------------------------------------
    def click(
        self,
        url: str,
        *,
        user_id: str,
        message: tuple[str, str],
        action_id: str,
        value: str | None = None,
        timestamp: int | None = None,
        secret: str | None = None,
    ) -> httpx.Response:
        """Click button `action_id` of the message at (channel, ts) as Slack user `user_id`;
        its `value` is the button's unless given."""
        where, ts = message
        shown = self.messages[message]
        button = next(
            (
                element
                for block in shown["blocks"]
                if block["type"] == "actions"
                for element in block["elements"]
                if element["action_id"] == action_id
            ),
            {"action_id": action_id, "type": "button"},
        )
        action = {**button, "block_id": "b1", "action_ts": f"{time.time():.6f}"}
        if value is not None:
            action["value"] = value
        payload = {
            "type": "block_actions",
            "user": {"id": user_id, "username": user_id.lower(), "team_id": "T1"},
            "api_app_id": "A1",
            "team": {"id": "T1", "domain": "acme"},
            "container": {"type": "message", "message_ts": ts, "channel_id": where},
            "channel": {"id": where},
            "message": {"type": "message", "ts": ts, **shown},
            "response_url": f"{self.base}response/{ts}",
            "trigger_id": "1.2.3",
            "actions": [action],
        }
        return self.post_signed(
            url, urlencode({"payload": json.dumps(payload)}), timestamp=timestamp, secret=secret
        )

    def submit(
        self,
        url: str,
        *,
        user_id: str,
        reason: str | None,
        view: dict[str, Any] | None = None,
        timestamp: int | None = None,
        secret: str | None = None,
    ) -> httpx.Response:
        """Submit the modal `view` (the last opened unless given) as Slack user `user_id`,
        `reason` written in its input (None: left empty, as Slack sends it)."""
        view = self.views[-1] if view is None else view
        values = {
            block["block_id"]: {
                block["element"]["action_id"]: {
                    "type": block["element"]["type"],
                    "value": reason,
                }
            }
            for block in view["blocks"]
            if block["type"] == "input"
        }
        payload = {
            "type": "view_submission",
            "team": {"id": "T1", "domain": "acme"},
            "user": {"id": user_id, "username": user_id.lower(), "team_id": "T1"},
            "api_app_id": "A1",
            "trigger_id": "4.5.6",
            "view": {**view, "state": {"values": values}},
        }
        return self.post_signed(
            url, urlencode({"payload": json.dumps(payload)}), timestamp=timestamp, secret=secret
        )

    def post_signed(
        self, url: str, body: str, *, timestamp: int | None = None, secret: str | None = None
    ) -> httpx.Response:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        base = f"v0:{stamp}:{body}".encode()
        key = (self.signing_secret if secret is None else secret).encode()
        signature = "v0=" + hmac.new(key, base, hashlib.sha256).hexdigest()
        return httpx.post(
            url,
            content=body.encode(),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": signature,
            },
            timeout=10,
        )
