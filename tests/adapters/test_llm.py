"""The real BAML runtime against a real HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import json
import logging
import time

import pytest

from bot.adapters.llm import BamlModel
from bot.core.events import DeployService, DoneForNow, ListGitTags, RequestMoreInformation
from bot.runtime.ports import LlmError
from tests.helpers import settle

pytestmark = [pytest.mark.redis, pytest.mark.network]


@pytest.fixture
def model(fake_llm) -> BamlModel:
    return BamlModel("openai-generic", "fake-model", "sk-fake", fake_llm.base_url)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"intent": "list_git_tags"}', ListGitTags),
        ('Sure!\n```json\n{"intent": "deploy", "service": "backend", "tag": "v1.2.3", "environment": "prod",}\n```',
         DeployService),
        ('I will deploy the frontend: {"intent": "deploy", "service": "frontend", "tag": "v2", "environment": "qa"}',
         DeployService),
        ('```\n{\n  "intent": "request_more_information",\n  "message": "Which environment?",\n}\n```',
         RequestMoreInformation),
        ("{'intent': 'done_for_now', 'message': 'All done'}", DoneForNow),
    ],
)
async def test_messy_model_text_becomes_a_typed_step(model, fake_llm, text, expected):
    fake_llm.script(text)
    step = await model.next_step("<user_message>hi</user_message>")
    assert type(step) is expected and step.source == "llm"
    assert "<user_message>hi</user_message>" in fake_llm.prompts[0]


async def test_fields_survive_parsing(model, fake_llm):
    fake_llm.script(
        '```json\n{"intent": "deploy", "service": "frontend", "tag": "v1.2.3", "environment": "production", '
        '"reason": "newest"}\n```'
    )
    step = await model.next_step("x")
    assert (step.service, step.tag, step.environment, step.reason) == ("frontend", "v1.2.3", "production", "newest")


async def test_the_service_is_one_of_the_catalog_or_the_answer_does_not_parse(fake_llm):
    """The catalog becomes the Service enum at run time (TypeBuilder): the prompt lists
    exactly its names, and a name outside it is no valid step, however the model spells it."""
    model = BamlModel("openai-generic", "m", "k", fake_llm.base_url, services=("billing-api", "web.app"))
    fake_llm.script(
        '{"intent": "deploy", "service": "billing-api", "tag": "v1", "environment": "staging"}',
        '{"intent": "list_git_tags", "service": "web.app"}',
        '{"intent": "deploy", "service": "backend", "tag": "v1", "environment": "staging"}',
    )
    step = await model.next_step("x")
    assert isinstance(step, DeployService) and step.service == "billing-api"
    assert "'billing-api' or 'web.app'" in fake_llm.prompts[0] and "backend" not in fake_llm.prompts[0]
    listed = await model.next_step("x")
    assert isinstance(listed, ListGitTags) and listed.service == "web.app"
    with pytest.raises(LlmError, match="not a valid next step"):
        await model.next_step("x")


@pytest.mark.parametrize("garbage", ["I cannot help with that.", '{"intent": "rm_rf"}', '{"intent": "deploy"}',
                                     '{"intent": "deploy_backend", "tag": "v1", "environment": "staging"}'])
async def test_garbage_is_a_clear_llm_error(model, fake_llm, garbage):
    fake_llm.script(garbage)
    with pytest.raises(LlmError, match="not a valid next step"):
        await model.next_step("x")


async def test_transient_http_errors_are_retried(model, fake_llm):
    fake_llm.script((503, '{"error": "overloaded"}'), (500, "{}"), '{"intent": "list_git_tags"}')
    assert isinstance(await model.next_step("x"), ListGitTags)
    assert len(fake_llm.prompts) == 3


async def test_a_model_that_never_answers_is_an_llm_error_within_llm_timeout(fake_llm):
    model = BamlModel("openai-generic", "fake-model", "sk-fake", fake_llm.base_url, timeout=0.5)
    fake_llm.delay = 5  # accepts the call, answers nothing for 5 s
    fake_llm.script('{"intent": "list_git_tags"}')
    started = time.monotonic()
    try:
        with pytest.raises(LlmError, match=r"did not answer within 0.5 s \(LLM_TIMEOUT\)"):
            await model.next_step("x")
    finally:
        fake_llm.delay = 0
    assert time.monotonic() - started < 3


async def test_a_server_that_keeps_failing_is_an_llm_error(model, fake_llm):
    fake_llm.default = (401, '{"error": {"message": "bad key"}}')
    with pytest.raises(LlmError, match="401"):
        await model.next_step("x")


async def test_an_error_body_echoing_a_secret_is_redacted_before_it_becomes_an_error(fake_llm):
    key = "local-model-key-7f3a9c"  # matches no generic pattern: only the known secrets catch it
    model = BamlModel("openai-generic", "fake-model", key, fake_llm.base_url, secrets=("slack-secret-42",))
    fake_llm.default = (401, json.dumps({"error": {"message": (
        f"Incorrect API key provided: {key}. Also echoed: slack-secret-42, sk-proj-abcdefghijklmnopqrstuv"
    )}}))
    with pytest.raises(LlmError, match="401") as e:
        await model.next_step("x")
    message = str(e.value)
    assert "Incorrect API key provided: [redacted]" in message
    assert not [s for s in (key, "slack-secret-42", "sk-proj-abcdefghijklmnopqrstuv") if s in message]


async def test_an_llm_error_event_holds_no_key(api, settings, fake_llm):
    key = settings.llm_api_key.get_secret_value()
    echo = (400, json.dumps({"error": {"message": f"invalid key {key}"}}))
    fake_llm.script(*[echo] * 4, '{"intent": "done_for_now", "message": "sorry"}')  # one call, retries and all
    r = await api.post("/threads", json={"message": "what can you do?", "user": "alice"})
    thread = await settle(api, r.json()["id"])
    error = next(e for e in thread["events"] if e["type"] == "error")
    assert error["kind"] == "llm" and "invalid key [redacted]" in error["message"]
    assert key not in json.dumps(thread)


PROMPT, REPLY = "UNIQUE-PROMPT-TEXT-31337", "UNIQUE-REPLY-TEXT-4242 not json"


async def test_failed_calls_log_no_prompt_or_reply_unless_debugging(fake_llm, capfd, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("BAML_LOG", "info")  # even one left in the environment: LOG_LEVEL decides
    model = BamlModel("openai-generic", "m", "k", fake_llm.base_url, log_level="INFO")
    capfd.readouterr()
    fake_llm.script(REPLY)  # not a step: BAML's WARN log has the prompt and this reply
    with pytest.raises(LlmError, match="not a valid next step"):
        await model.next_step(PROMPT)
    fake_llm.default = (400, json.dumps({"error": {"message": "bad request"}}))  # a failed request: the same
    with pytest.raises(LlmError, match="400"):
        await model.next_step(PROMPT)
    logged = "".join(capfd.readouterr()) + caplog.text  # BAML writes to the process's stderr
    assert PROMPT not in logged and REPLY not in logged

    debugging = BamlModel("openai-generic", "m", "k", fake_llm.base_url, log_level="debug")
    fake_llm.script(REPLY)
    with pytest.raises(LlmError):
        await debugging.next_step(PROMPT)
    logged = "".join(capfd.readouterr())
    assert PROMPT in logged and REPLY in logged  # LOG_LEVEL=DEBUG: the operator asked for them
