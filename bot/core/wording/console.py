"""The web console: what a destructive button will do, said before it does it; the deploy
form and matrix (bot/adapters/http/console/deploy_form.py, matrix.py)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.events import Change
from bot.core.wording.changes import goes

__all__ = [
    "PREVIEW_STOPS", "approval_key_facts", "approval_needed", "confirm_cancel", "confirm_promote",
    "confirm_rollback", "confirm_stop", "confirm_take", "deploy_needs_a_tag", "deploys_once_sent", "faulty_warning",
    "goes_back_warning", "matrix_scrolls", "menu", "preview_stop", "reason_asks", "reason_in_parentheses",
    "refused_at_once", "retry_reason", "tags_unreadable",
]


def confirm_rollback(service: str, environment: str, from_tag: str, to_tag: str) -> str:
    return (f"Roll back {service} in {environment} from {from_tag} to {to_tag}? A new thread asks for approval "
            "where it must, and the service stays locked there afterwards.")


def retry_reason(thread_id: str) -> str:
    """The reason a Retry of a failed deploy is asked with (said in the command's parentheses)."""
    return f"retry of thread {thread_id}"


def confirm_promote(service: str, source: str, environment: str, tag: str, commit: str) -> str:
    return (f"Promote {service} {tag} ({commit[:7]}), which passed {source}, to {environment}? A new thread "
            "deploys that commit, asking for approval where it must.")


def confirm_cancel() -> str:
    return "Cancel this thread? Nothing more happens in it: a deploy waiting here is dropped. It cannot be undone."


def confirm_stop(where: str) -> str:
    return f"Stop every deploy to {where}? None starts until someone resumes them (or until the time given)."


def confirm_take(target: str, holder: str) -> str:
    return f"Take the lock on {target} from {holder}? {holder} is told, with your reason."


def approval_needed(required: int, deciders: str) -> str:
    """Who must approve a deploy the console's form would ask for: "needs 2 approvals from alice or erin"."""
    return f"needs {required} approvals from {deciders}" if required > 1 else f"needs an approval from {deciders}"


# An approval card (the approvals page, the board, a thread): what to know before approving.


def approval_key_facts(asker: str, change: Change | None) -> str:
    """Who asked and how far it moves, on one line ("asked by carol · 3 commits ahead"): what
    a phone shows above Approve, under the heading that names the service, tag and environment."""
    if change is None or change.unknown:
        return f"asked by {asker}"
    moves = goes(change.ahead, change.behind) if change.from_commit else "the first deploy there"
    return f"asked by {asker} · {moves}"


def goes_back_warning(behind: int, environment: str) -> str:
    removed = f"{behind} commit deployed on {environment} now would be removed" if behind == 1 else (
        f"{behind} commits deployed on {environment} now would be removed")
    return f"Goes back to an older commit: {removed} (like a rollback)."


def faulty_warning(commit: str, environments: Sequence[str]) -> str:
    return (f"Commit {commit[:7]} was marked faulty in {', '.join(environments)}: a deploy of it there was "
            "rolled back or failed its verification. Look again before approving.")


def deploys_once_sent() -> str:
    return "none needed: it deploys once sent"


def refused_at_once() -> str:
    """The preview's approval line when a deploy rule refuses the deploy: nobody would be asked."""
    return "none asked: sending it now is refused at once (see below)"


PREVIEW_STOPS = {"frozen": "Freeze", "promotion": "Promotion", "checks": "CI", "recheck": "Rollback"}


def preview_stop(kind: str) -> str:
    """What the preview calls a deploy rule that refuses the deploy, by the refusal's kind."""
    return PREVIEW_STOPS.get(kind, "Refused")


def reason_in_parentheses() -> str:
    return "a reason cannot hold ( or ): it is said in parentheses after the deploy command"


def reason_asks() -> str:
    return "a reason cannot hold a question mark: a question is never taken as a command"


def deploy_needs_a_tag() -> str:
    return "choose a tag to deploy"


def matrix_scrolls(count: int) -> str:
    """Above the matrix when it is wider than the screen (a phone): it scrolls inside its box."""
    return f"{count} environments: swipe the table sideways to see them all."


def menu() -> str:
    """What opens the navigation on a phone, where its links take one row."""
    return "Menu"


def tags_unreadable(service: str, error: object) -> str:
    return f"the tags of {service} could not be read: {error}"
