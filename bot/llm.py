"""The only module that touches BAML: context text in, one of our step events out."""

from __future__ import annotations

from baml_py import ClientRegistry
from baml_py.errors import BamlClientHttpError, BamlError, BamlTimeoutError, BamlValidationError
from baml_py.logging import set_log_level

from bot.baml_client import types as baml
from bot.baml_client.async_client import b
from bot.events import (
    DeployBackend,
    DeployFrontend,
    DoneForNow,
    ListGitTags,
    RequestMoreInformation,
    Step,
)
from bot.ports import LlmError

CLIENT = "DeployBot"
RETRY_POLICY = "Backoff"  # defined in baml_src/clients.baml: transient HTTP errors are retried
PROVIDERS = ("openai", "anthropic", "openai-generic")

# BAML logs every prompt and reply at INFO; they can hold user text, so keep them out of logs.
set_log_level("WARN")


class BamlModel:
    def __init__(self, provider: str, model: str, api_key: str, base_url: str | None = None):
        if provider not in PROVIDERS:
            raise ValueError(f"LLM_PROVIDER must be one of {', '.join(PROVIDERS)}, not {provider!r}")
        options: dict[str, str] = {"model": model, "api_key": api_key}
        if base_url:
            options["base_url"] = base_url
        if provider == "anthropic":
            options["max_tokens"] = "1024"
        self._registry = ClientRegistry()
        self._registry.add_llm_client(CLIENT, provider, options, retry_policy=RETRY_POLICY)
        self._registry.set_primary(CLIENT)
        self.description = f"{provider}:{model}"

    async def next_step(self, context: str) -> Step:
        try:
            out = await b.DetermineNextStep(context, baml_options={"client_registry": self._registry})
        except BamlValidationError as e:
            raise LlmError(f"the model's answer was not a valid next step: {_clip(e.raw_output)}") from e
        except BamlClientHttpError as e:
            raise LlmError(f"the model server answered HTTP {e.status_code}: {_clip(e.message)}") from e
        except BamlTimeoutError as e:
            raise LlmError(f"the model did not answer in time: {_clip(str(e))}") from e
        except BamlError as e:
            raise LlmError(f"the model call failed: {_clip(str(e))}") from e
        return to_event(out)


def to_event(out: object) -> Step:
    match out:
        case baml.ListGitTags():
            return ListGitTags()
        case baml.DeployBackend():
            return DeployBackend(tag=out.tag, environment=out.environment, reason=out.reason)
        case baml.DeployFrontend():
            return DeployFrontend(tag=out.tag, environment=out.environment, reason=out.reason)
        case baml.RequestMoreInformation():
            return RequestMoreInformation(message=out.message)
        case baml.DoneForNow():
            return DoneForNow(message=out.message)
    raise LlmError(f"the model returned an unknown step type {type(out).__name__}")


def _clip(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "…"
