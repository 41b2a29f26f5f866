"""An agent's retried request over MCP (the official SDK's client, Streamable HTTP, the real
web app and Redis): with the same `idempotency_key` it answers the first thread, counted once
against the agent's limits and recorded once; without a key every call is a new thread, as
before; a key that is no key is refused before anything is stored."""

from __future__ import annotations

import pytest

from tests.adapters.channels.test_mcp import call, config, fake_slack, http_agent, refused, settings, slack, token  # noqa: F401

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

DEPLOY = {"service": "backend", "tag": "v1.2.3", "environment": "staging", "reason": "ci run 7"}


async def thread_ids(app) -> set[str]:
    return {t.id for t in await app.service.recent(limit=200)}


async def test_a_retried_request_with_its_key_answers_the_first_thread(app, api, token):  # noqa: F811
    async with http_agent(api, token) as agent:
        # Four tries of one request: more than the agent's max_per_hour of 3, were they counted.
        tries = [await call(agent, "request_deploy", **DEPLOY, idempotency_key="ci-7") for _ in range(4)]
        assert len({t["thread_id"] for t in tries}) == 1
        rollback = [await call(agent, "request_rollback", service="backend", environment="staging",
                               reason="undo", idempotency_key="ci-8") for _ in range(2)]
        assert len({r["thread_id"] for r in rollback}) == 1
        assert await thread_ids(app) == {tries[0]["thread_id"], rollback[0]["thread_id"]}
        thread = await app.service.get(tries[0]["thread_id"])
        assert [e.tool for e in thread.events if type(e).__name__ == "ToolCalled"] == ["request_deploy"]

        # the same key for another request is refused; no key: a new thread, as without keys
        other = await refused(agent, "request_deploy", **{**DEPLOY, "tag": "v1.2.2"}, idempotency_key="ci-7")
        assert "another message" in other and "idempotency_key" in other
        fresh = await call(agent, "request_deploy", **DEPLOY)
        assert fresh["thread_id"] not in {tries[0]["thread_id"], rollback[0]["thread_id"]}


async def test_a_key_that_is_no_key_is_refused_storing_nothing(app, api, token):  # noqa: F811
    async with http_agent(api, token) as agent:
        for bad in ("", "has space", "x" * 201):
            said = await refused(agent, "request_deploy", **DEPLOY, idempotency_key=bad)
            assert "idempotency_key must be 1 to 200 printable characters" in said, said
    assert await thread_ids(app) == set()
