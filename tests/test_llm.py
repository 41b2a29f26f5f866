"""The real BAML runtime against a real HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import pytest

from bot.events import DeployBackend, DeployFrontend, DoneForNow, ListGitTags, RequestMoreInformation
from bot.llm import BamlModel
from bot.ports import LlmError


@pytest.fixture
def model(fake_llm) -> BamlModel:
    return BamlModel("openai-generic", "fake-model", "sk-fake", fake_llm.base_url)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"intent": "list_git_tags"}', ListGitTags),
        ('Sure!\n```json\n{"intent": "deploy_backend", "tag": "v1.2.3", "environment": "production",}\n```',
         DeployBackend),
        ('I will deploy the frontend: {"intent": "deploy_frontend", "tag": "v2", "environment": "staging"} — ok?',
         DeployFrontend),
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
        '```json\n{"intent": "deploy_backend", "tag": "v1.2.3", "environment": "production", "reason": "newest"}\n```'
    )
    step = await model.next_step("x")
    assert (step.tag, step.environment, step.reason) == ("v1.2.3", "production", "newest")


@pytest.mark.parametrize("garbage", ["I cannot help with that.", '{"intent": "rm_rf"}', '{"intent": "deploy_backend"}'])
async def test_garbage_is_a_clear_llm_error(model, fake_llm, garbage):
    fake_llm.script(garbage)
    with pytest.raises(LlmError, match="not a valid next step"):
        await model.next_step("x")


async def test_transient_http_errors_are_retried(model, fake_llm):
    fake_llm.script((503, '{"error": "overloaded"}'), (500, "{}"), '{"intent": "list_git_tags"}')
    assert isinstance(await model.next_step("x"), ListGitTags)
    assert len(fake_llm.prompts) == 3


async def test_a_server_that_keeps_failing_is_an_llm_error(model, fake_llm):
    fake_llm.default = (401, '{"error": {"message": "bad key"}}')
    with pytest.raises(LlmError, match="401"):
        await model.next_step("x")


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError, match="LLM_PROVIDER"):
        BamlModel("llama-magic", "m", "k")
