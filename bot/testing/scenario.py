"""What the chaos run and the fault suite both drive: the approver (a person with a Slack id,
deciding with their own API token), the model's stand-in that plans these scenarios from the
thread it is shown, and whether a deploy the command ran was the one the approver approved."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

APPROVER = "alice"
APPROVER_SLACK = "UALICE"


def people_file(workdir: Path) -> Path:
    """The approver is a person (decisions are made by people, with their own token)."""
    path = workdir / "deploybot.toml"
    path.write_text(f'[people.{APPROVER}]\nslack = "{APPROVER_SLACK}"\n')
    return path


_BLOCK = re.compile(r"^<(\w+)([^>]*)>", re.M)


def plan(prompt: str) -> str:
    """What a good model would answer for these scenarios, in the chatty shape real models
    use. A request saying "garbled" first gets text no parser can read."""
    thread = prompt.split("oldest first:", 1)[-1].split("What is the next step?", 1)[0]
    blocks = _BLOCK.findall(thread)
    last, attrs = blocks[-1] if blocks else ("", "")
    request = re.search(r"deploy (backend|frontend) to (\S+)", thread)
    service, environment = request.groups() if request else ("backend", "staging")
    if last == "user_message" and "garbled" in thread and "<error" not in thread:
        return "Hmm, let me think about deploying that. I would probably check the tags."
    if last in ("user_message", "error") and "<list_git_tags_result" not in thread:
        return _reply(intent="list_git_tags")
    if last == "list_git_tags_result":
        newest = thread.split("<list_git_tags_result>", 1)[1].split()[0]
        return _reply(intent="deploy", service=service, tag=newest, environment=environment, reason="asked for")
    if last == "human_response" and 'decision="rejected"' in attrs:
        return _reply(intent="deploy", service=service, tag="v1.2.2", environment=environment, reason="feedback")
    return _reply(intent="done_for_now", message=f"finished after {last or 'nothing'}")


def _reply(**step: Any) -> str:
    return f"Here is the next step.\n```json\n{json.dumps(step)}\n```"


def approved(threads: dict[str, dict[str, Any]], deploy_id: str, service: str, tag: str, env: str) -> bool:
    """The thread asked for this exact deploy and an approver approved that request."""
    thread_id, _, step_id = deploy_id.rpartition("-")
    events = threads.get(thread_id, {}).get("events", [])
    asked = {e["approval_id"] for e in events if e["type"] == "approval_requested"
             and e["step_id"] == step_id and e["tag"] == tag and e["environment"] == env and e["service"] == service}
    return any(e["type"] == "human_response" and e.get("approve") is True and e["user"] == APPROVER
               and e.get("approval_id") in asked for e in events)
