"""AI agents (MCP): they may ask for deploys, never approve them; and `python -m bot mcp`, an
agent's stdio bridge to /mcp."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.tokens import PERSONAL_TOKEN_PREFIX

__all__ = [
    "agent_asks_to_deploy", "agent_cannot", "agent_environment_not_allowed", "agent_name", "agent_not_its_thread",
    "agent_too_many_open", "agent_too_many_per_hour", "agent_unknown_service", "bridge_bad_url",
    "bridge_holds_the_store", "bridge_needs", "bridge_token_refused", "bridge_unreachable", "mcp_needs_agent_token",
    "tool_called",
]


def agent_name(name: str, owner: str | None) -> str:
    """How people see an agent: `claude-code (agent of alice)`."""
    return f"{name} (agent of {owner})" if owner else f"{name} (agent)"


def agent_asks_to_deploy(asker: str, service: str, tag: str, environment: str) -> str:
    return f"{asker} asks to deploy {service} {tag} to {environment}"


def agent_cannot(name: str, what: str) -> str:
    return f"{name} is an agent: agents may ask for deploys but cannot {what}; a person must"


def agent_environment_not_allowed(name: str, environment: str, allowed: Iterable[str]) -> str:
    listed = ", ".join(sorted(allowed)) or "none"
    return f"{name} may not ask for deploys to {environment} (its environments in deploybot.toml: {listed})"


def agent_too_many_open(name: str, open_now: int, limit: int) -> str:
    return (
        f"{name} already has {open_now} open requests, its limit (max_open = {limit}): wait for one to "
        "finish, or cancel one (cancel_thread)"
    )


def agent_too_many_per_hour(name: str, made: int, limit: int) -> str:
    return f"{name} made {made} requests in the last hour, its limit (max_per_hour = {limit}): try again later"


def agent_not_its_thread(name: str, thread_id: str, what: str = "cancel") -> str:
    return f"thread {thread_id} was not started by {name}: an agent may {what} only its own threads"


def agent_unknown_service(service: str, services: Iterable[str]) -> str:
    return f"unknown service {service!r}; services: {', '.join(sorted(services)) or 'none'}"


def mcp_needs_agent_token() -> str:
    return (
        f"the MCP endpoint needs an agent's token (Authorization: Bearer {PERSONAL_TOKEN_PREFIX}...): "
        "`python -m bot tokens create --agent NAME`"
    )


def bridge_holds_the_store(setting: str) -> str:
    return (
        f"{setting} is set: an agent's process must not hold the store's credentials, whoever holds them "
        "is the operator (docs/security.md); give `python -m bot mcp` only DEPLOYBOT_TOKEN and DEPLOYBOT_URL"
    )


def bridge_needs(setting: str, what: str) -> str:
    return f"{setting} is not set: `python -m bot mcp` needs {what} (docs/agents.md)"


def bridge_bad_url(url: str) -> str:
    return f"DEPLOYBOT_URL={url} is not the server's address: give it as http(s)://HOST[:PORT], e.g. http://127.0.0.1:8000"


def bridge_token_refused(url: str, status: int, reason: str) -> str:
    return (f"the deploybot server at {url} refused DEPLOYBOT_TOKEN ({status}): {reason.rstrip('.')}; an agent's "
            "token comes from `python -m bot tokens create --agent NAME`")


def bridge_unreachable(url: str, why: str) -> str:
    return f"cannot reach the deploybot server at {url} (DEPLOYBOT_URL): {why}"


def tool_called(tool: str, agent: str) -> str:
    return f"{agent} called {tool}"
