"""An OpenAI-compatible model stand-in for load: asyncio (aiohttp), so hundreds of calls
can wait at once at little CPU cost, which the threaded FakeLlm cannot do.

Every answer is done_for_now after DELAY seconds; a prompt containing `delay=<seconds>`
waits that long instead.

    python -m bot.testing.quick_llm --delay 0.2     # prints its base URL, serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time

from aiohttp import web

ANSWER = 'Done.\n```json\n{"intent": "done_for_now", "message": "all good"}\n```'


def app(delay: float) -> web.Application:
    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        asked = re.search(r"delay=([0-9.]+)", prompt)
        await asyncio.sleep(float(asked.group(1)) if asked else delay)
        return web.json_response({
            "id": "chatcmpl-quick", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "quick"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    application = web.Application()
    application.router.add_post("/v1/chat/completions", complete)
    return application


async def main(delay: float, port: int) -> None:
    runner = web.AppRunner(app(delay), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=2048)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(json.dumps({"base_url": f"http://127.0.0.1:{bound}/v1"}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    asyncio.run(main(args.delay, args.port))
