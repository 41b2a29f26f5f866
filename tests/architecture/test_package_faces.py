"""Each package of bot/ has a face: a docstring saying what it offers and an `__all__` naming
it. The table below is those faces, so that a change to one is made on purpose (here too)."""

import importlib
import pkgutil
from pathlib import Path

import pytest

import bot

FACES: dict[str, list[str]] = {
    "bot": ["adapters", "config", "core", "runtime", "testing", "wiring"],
    "bot.adapters": ["channels", "deployers", "github_api", "http", "llm", "outbound", "probes", "redis"],
    "bot.adapters.channels": ["cli", "deliveries", "email", "github", "log", "mcp", "outgoing_webhooks", "slack"],
    "bot.adapters.channels.email": ["KIND", "TARGET", "EmailChannel", "Smtp", "normalise_address"],
    "bot.adapters.channels.mcp": ["MAX_WAIT", "PATH", "Tools", "WithMcp", "server"],
    "bot.adapters.channels.github": ["KIND", "GitHubDeployments", "GitHubGate", "GitHubWebhook", "normalise_login"],
    "bot.adapters.channels.slack": [
        "COULD_NOT_OPEN_FORM", "EVENT_TTL", "KIND", "NOT_OUR_BUTTON", "SLASH_COMMAND", "STALE_FORM", "SignInLink",
        "TARGET", "SlackChannel", "SlackNotifier", "build", "client", "normalise_user"
    ],
    "bot.adapters.deployers": [
        "command", "commit_times", "dry_run", "git_refs", "github_actions", "output", "pair", "prefixed", "tag_order"
    ],
    "bot.adapters.http": ["api", "auth", "console", "front_door", "limits", "logs", "origins", "sessions", "shared"],
    "bot.adapters.http.api": ["create_app"],
    "bot.adapters.http.console": ["mount"],
    "bot.adapters.probes": ["ANSWER_LIMIT", "BODY_LIMIT", "PROMETHEUS_TIMEOUT", "HttpProbe"],
    "bot.adapters.redis": [
        "connect", "credentials", "cursors", "deploy_counters", "embedded", "environments", "eviction", "freezes",
        "inbox", "keys", "live_output", "outbox", "packing", "replicas", "replies", "schedules", "scripts",
        "thread_scripts", "threads", "timers", "work"
    ],
    "bot.config": [
        "access", "channels", "fields", "file_freezes", "file_people", "file_services", "file_triggers", "file_values",
        "github", "reading", "redaction", "services", "settings", "settings_file", "store", "triggering", "web"
    ],
    "bot.core": [
        "agents", "audit", "authority", "catalog", "characters", "code_links", "commands", "control",
        "delivery_metrics", "deploy_command", "deploy_rules", "deploys", "events", "freeze_windows", "gate", "identity",
        "notices", "outcomes", "people", "policy", "promotion", "prompt", "public_url", "redis_target", "standing",
        "thread", "tokens", "transcript", "triggers", "verification", "views", "wording"
    ],
    "bot.runtime": [
        "agent", "clock", "delivery", "deploy_checks", "deploy_parts", "deploy_queue", "deploy_run", "deploying",
        "gathering", "gc", "launch_once", "loop", "ports", "promoting", "renewal", "retry", "scheduler", "service",
        "skew",
        "steps", "verifying", "worker"
    ],
    "bot.testing": [
        "chaos", "cluster", "fake_github", "fake_llm", "fake_slack", "fake_socket_mode", "fault_proxy", "faults", "ha",
        "http", "memory", "prometheus", "quick_llm", "scenario", "seed_history", "try_gate"
    ],
    "bot.testing.faults": [
        "BY_NAME", "FAULTS", "Fault", "Result", "Seen", "ledger", "mail", "network", "processes", "rig", "run",
        "storage", "suite"
    ],
    "bot.adapters.http.console.model": [
        "Approval", "Audit", "BLOCKING", "Blocked", "CheckState", "Decision", "Deployed", "Environment", "Freezing",
        "Held", "Item", "Promotable", "Queued", "Row", "Running", "ServiceRow", "Stop", "Verifying", "Window", "Words",
        "ago", "approvals", "audit", "blocked", "current_of", "decision", "deployed", "describe_deciders",
        "environment", "freezing", "held", "latest_per_service", "left", "marked_faulty", "matches", "names",
        "newest_first", "newest_per_service", "next_window", "ordered", "promotable", "queued", "record_fields",
        "rollback_target", "rollbackable", "row", "running", "service_rows", "services_in", "stop", "timeline",
        "verifying"
    ],
    "bot.runtime.ports": [
        "Channel", "Check", "CheckState", "CommitTimes", "Comparison", "Conflict", "DeployCounters", "DeployOutcome",
        "DeployQueue", "DeployRecord", "DeployRequest", "DeployRunner", "Deployer", "DeployerError", "Endpoint",
        "FreezeStore", "Health", "History", "Inbox", "LeaseLost", "LiveOutput", "LlmError", "Lock", "Locks",
        "NextStepModel", "Notifier", "Observation", "Outbox", "Outgoing", "Probe", "Removal", "Retention", "Route",
        "ScheduleMarks", "Tally", "ThreadExists", "ThreadNotFound", "ThreadStore", "Timers", "Unsafe", "Versions",
        "Work", "WorkQueue"
    ],
    "bot.core.events": [
        "ApprovalEscalated", "ApprovalExpired", "ApprovalReminded", "ApprovalRequested", "ApprovalRulesChanged",
        "COMMAND_STEPS", "Cancelled", "Change", "CheckObserved", "CommandResult", "CommandStep", "CommitSummary",
        "DEPLOY_STEPS", "DeliveryFailed", "Deploy", "DeployBackend", "DeployFrontend", "DeployQueued", "DeployResult",
        "DeployService", "DeployStarted", "DoneForNow", "EVENT", "Error", "ErrorKind", "Event", "GitHubAnswered",
        "GitTag", "GitTagsResult", "HumanResponse", "LEGACY", "ListGitTags", "LockEnvironment", "LockTaken",
        "PREVIEW_COMMITS", "Promote", "RequestMoreInformation", "ResumeDeploys", "RollBack", "STEP_TYPES", "Said",
        "SenderConfirmationExpired", "SenderConfirmationRequested", "SenderConfirmed", "ShowDeploys", "Step",
        "StepSource", "StopDeploys", "ToolCalled", "UNRECORDED", "UnlockEnvironment", "UserMessage", "V",
        "VerificationEnded", "VerificationRefused", "VerificationStarted", "VerifyCheck", "dump", "entry_for",
        "identity_of", "load", "new_id", "principal_of", "stamped"
    ],
    "bot.core.prompt": [
        "CONTEXT_BUDGET", "MAX_TAGS", "MIN_BUDGET", "REDACTED", "estimate_tokens", "fit", "redact", "render"
    ],
    "bot.testing.memory": [
        "OK", "Crash", "ManualClock", "MemoryDeployQueue", "MemoryDeployer", "MemoryEnvironments", "MemoryFreezes",
        "MemoryInbox", "MemoryLiveOutput", "MemoryThreadStore", "MemoryTimers", "Monotonic", "Outcome",
        "RecordingNotifier", "Reply", "ScriptedModel"
    ],
    "bot.testing.fake_github": ["FakeGitHub"],
    "bot.wiring": ["app", "channels", "children", "deployers", "sign_in"],
}
# Faces pinned elsewhere: the sentences (tests/core/test_wording.py) and BAML's generated client.
ELSEWHERE = {"bot.core.wording", "bot.baml_client"}


def _packages() -> list[str]:
    root = Path(bot.__file__).parent
    found = ["bot"]
    for init in sorted(root.rglob("__init__.py")):
        name = ".".join(("bot", *init.parent.relative_to(root).parts))
        if init.parent != root and "__pycache__" not in init.parts:
            found.append(name)
    return [name for name in found if not any(name == e or name.startswith(e + ".") for e in ELSEWHERE)]


def _submodules(package: str) -> set[str]:
    path = importlib.import_module(package).__path__
    found = {m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("__")}
    return {name for name in found if f"{package}.{name}" != "bot.baml_client"}  # generated, no face


def test_every_package_has_a_face_in_the_table() -> None:
    assert sorted(_packages()) == sorted(FACES)


@pytest.mark.parametrize("package", sorted(FACES))
def test_a_package_says_what_it_offers_and_names_it(package: str) -> None:
    module = importlib.import_module(package)
    assert (module.__doc__ or "").strip(), f"{package}: a docstring saying what it offers"
    assert list(getattr(module, "__all__", [])) == FACES[package]


@pytest.mark.parametrize("package", sorted(FACES))
def test_every_name_of_a_face_is_there(package: str) -> None:
    module = importlib.import_module(package)
    submodules = _submodules(package)
    for name in FACES[package]:
        assert hasattr(module, name) or name in submodules, f"{package}.{name}"


@pytest.mark.parametrize("package", sorted(FACES))
def test_a_package_of_modules_names_each(package: str) -> None:
    """A face made of modules lists them all: a new module is on it on purpose."""
    submodules = _submodules(package)
    if set(FACES[package]) <= submodules:
        assert set(FACES[package]) == submodules
