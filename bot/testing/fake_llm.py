"""A real HTTP server that speaks OpenAI's `/v1/chat/completions` with scripted replies.

Tests and benchmarks point `LLM_BASE_URL` at it, so the real BAML runtime sends real
requests and parses real-looking (often messy) model text.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from bot.testing.http import serve, stop, url

# A reply is model text, or (status, body) for an HTTP error, or a function of the prompt.
Reply = str | tuple[int, str] | Callable[[str], str]


@dataclass
class FakeLlm:
    delay: float = 0.0
    replies: deque[Reply] = field(default_factory=deque)
    default: Reply | None = None
    prompts: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return url(self._server) + "/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> FakeLlm:
        def route(method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, dict[str, str]]:
            body = json.loads(raw or b"{}")
            prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
            status, payload = self._answer(prompt, body.get("model", "fake"))
            if status == 200 and body.get("stream"):
                return 200, _stream(json.loads(payload)), {"Content-Type": "text/event-stream"}
            return status, payload, {}

        self._server = serve(route)
        return self

    def stop(self) -> None:
        stop(self._server)

    def _answer(self, prompt: str, model: str) -> tuple[int, str]:
        with self._lock:  # recorded on arrival: `prompts` is what the model was asked so far
            self.prompts.append(prompt)
            reply = self.replies.popleft() if self.replies else self.default
        if self.delay:
            time.sleep(self.delay)
        if reply is None:
            return 500, json.dumps({"error": {"message": "fake LLM: no scripted reply left"}})
        if callable(reply):
            try:
                reply = reply(prompt)
            except Exception as e:  # a broken test responder must show up as an HTTP error
                return 500, json.dumps({"error": {"message": f"fake LLM responder failed: {e!r}"}})
        if isinstance(reply, tuple):
            return reply
        return 200, json.dumps(_completion(reply, model))


def _text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _completion(text: str, model: str) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _stream(completion: dict) -> str:
    """The same completion as server-sent events, the way OpenAI streams it."""
    text = completion["choices"][0]["message"]["content"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
