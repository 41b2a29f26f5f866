"""The only module that touches BAML: context text in, one of our step events out.

Prompts and raw replies hold people's text: they stay out of logs unless LOG_LEVEL=DEBUG.
BAML's own log writes them at INFO (every call) and at WARN (every failed call, parse
failures included), so BAML logs at ERROR otherwise; the level is passed on every call, so
a BAML_LOG left in the environment cannot turn it back up. An error the model server sends
back (which may echo the key) is redacted before it becomes an LlmError, and so an event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from baml_py import ClientRegistry
from baml_py.errors import BamlClientHttpError, BamlError, BamlTimeoutError, BamlValidationError
from baml_py.logging import set_log_level

from bot.baml_client import types as baml
from bot.baml_client.async_client import b
from bot.baml_client.type_builder import TypeBuilder
from bot.core.events import (
    DeployService,
    DoneForNow,
    ListGitTags,
    RequestMoreInformation,
    Step,
)
from bot.core.prompt import redact
from bot.runtime.ports import LlmError

CLIENT = "DeployBot"
RETRY_POLICY = "Backoff"  # defined in baml_src/clients.baml: transient HTTP errors are retried
PROVIDERS = ("openai", "anthropic", "openai-generic")

QUIET = "ERROR"  # BAML's WARN already logs the prompt and the raw reply of a failed call
set_log_level(QUIET)


def baml_log_level(log_level: str) -> str:
    """BAML's level for the app's LOG_LEVEL: prompts and replies (INFO) only when debugging."""
    return "INFO" if log_level.strip().upper() == "DEBUG" else QUIET


class BamlModel:
    def __init__(
        self, provider: str, model: str, api_key: str, base_url: str | None = None,
        secrets: Iterable[str] = (), log_level: str = "INFO", services: Sequence[str] = ("backend", "frontend"),
        timeout: float = 60.0,
    ):
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
        self.secrets = (api_key, *secrets)
        self._env: dict[str, str | None] = {"BAML_LOG": baml_log_level(log_level)}
        self.services = tuple(services)
        self.timeout = timeout  # seconds for the whole call, retries and all (LLM_TIMEOUT)

    def _type_builder(self) -> TypeBuilder:
        """The catalog as the `Service` enum: the model sees, and the parser accepts, only
        these names. An enum value must be an identifier, so each is `S<i>` aliased to the
        service's name (which may hold '-' or '.'); `to_event` maps them back."""
        tb = TypeBuilder()
        for i, name in enumerate(self.services):
            tb.Service.add_value(f"S{i}").alias(name)
        return tb

    async def next_step(self, context: str) -> Step:
        try:
            # A total bound: a model server that accepts the connection and never answers must
            # not hold the thread "running" and a worker's slot forever.
            out = await asyncio.wait_for(b.DetermineNextStep(
                context,
                baml_options={"client_registry": self._registry, "env": self._env, "tb": self._type_builder()},
            ), self.timeout)
        except TimeoutError as e:
            raise LlmError(f"the model did not answer within {self.timeout:g} s (LLM_TIMEOUT)") from e
        except BamlValidationError as e:
            raise self._error("the model's answer was not a valid next step", e.raw_output) from e
        except BamlClientHttpError as e:
            raise self._error(f"the model server answered HTTP {e.status_code}", e.message) from e
        except BamlTimeoutError as e:
            raise self._error("the model did not answer in time", str(e)) from e
        except BamlError as e:
            raise self._error("the model call failed", str(e)) from e
        return to_event(out, self.services)

    def _error(self, what: str, detail: str | None) -> LlmError:
        """An LlmError becomes an event people and the model read: whatever the server said
        (an error body may echo the key) is redacted, before it is clipped."""
        return LlmError(f"{what}: {_clip(redact(detail or '', self.secrets))}")


def to_event(out: object, services: Sequence[str]) -> Step:
    match out:
        case baml.ListGitTags():
            return ListGitTags(service=_service(out.service, services) if out.service else None)
        case baml.Deploy():
            service = _service(out.service, services)
            return DeployService(service=service, tag=out.tag, environment=out.environment, reason=out.reason)
        case baml.RequestMoreInformation():
            return RequestMoreInformation(message=out.message)
        case baml.DoneForNow():
            return DoneForNow(message=out.message)
    raise LlmError(f"the model returned an unknown step type {type(out).__name__}")


def _service(value: object, services: Sequence[str]) -> str:
    """The catalog name of a parsed `Service` value (`S<i>`, see BamlModel._type_builder)."""
    name = getattr(value, "value", value)
    if isinstance(name, str) and name.startswith("S") and name[1:].isdigit() and int(name[1:]) < len(services):
        return services[int(name[1:])]
    raise LlmError(f"the model named a service that is not in the catalog: {_clip(str(name), 60)}")


def _clip(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "…"
