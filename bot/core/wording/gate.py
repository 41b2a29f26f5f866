"""The GitHub deployment gate (bot/adapters/channels/github/gate.py): GitHub shows these
comments on the workflow run, to whoever may read the repository."""

from __future__ import annotations

from bot.core.wording.metrics import span

__all__ = [
    "GATE_COMMENT_MAX", "gate_answered", "gate_approved", "gate_cancelled", "gate_comment", "gate_deployment_ended",
    "gate_expired", "gate_link", "gate_no_deployment", "gate_not_deploying", "gate_not_reported", "gate_rejected",
    "gate_run_ended", "gate_run_finished", "gate_unknown",
]


GATE_COMMENT_MAX = 1000  # characters of a callback's comment


def gate_comment(text: str) -> str:
    text = text.strip()
    return text if len(text) <= GATE_COMMENT_MAX else text[: GATE_COMMENT_MAX - 1] + "…"


def gate_approved(approvers: str | None, environment: str, link: str) -> str:
    """`approvers` None: the deploy asked for no approval (the environment needs none)."""
    if approvers is None:
        return gate_comment(f"Approved: {environment} needs no approval in deploybot. {link}")
    return gate_comment(f"Approved in deploybot by {approvers or 'an approver'}. {link}")


# How a followed job ended (the gated deploy's output): only a deployment that reported
# success is one; anything else says plainly that nobody knows.


def gate_deployment_ended(state: str) -> str:
    return f"The job's deployment ended: {state}"


def gate_run_ended(conclusion: str) -> str:
    return (f"The workflow run ended ({conclusion}) without its deployment reporting an outcome: "
            "whether anything was deployed is unknown. Look at the run.")


def gate_run_finished(conclusion: str) -> str:
    """A gated job GitHub named no deployment for: its workflow run's conclusion is its outcome."""
    return f"The workflow run ended: {conclusion} (GitHub named no deployment: the run's conclusion is the outcome)"


def gate_not_reported(seconds: float) -> str:
    return (f"The job's deployment reported no outcome within {span(seconds)}: deploybot stopped following it "
            "and let the lock go. Whether anything was deployed is unknown. Look at the run.")


def gate_no_deployment() -> str:
    return "GitHub named no deployment to follow: whether anything was deployed is unknown. Look at the run."


def gate_rejected(who: str, feedback: str, link: str) -> str:
    said = f": {' '.join(feedback.split())}" if feedback.strip() else ""
    return gate_comment(f"Rejected in deploybot by {who}{said}. {link}")


def gate_expired(link: str) -> str:
    return gate_comment(f"Rejected: the approval in deploybot expired before anyone decided. {link}")


def gate_cancelled(who: str, reason: str, link: str) -> str:
    said = f": {' '.join(reason.split())}" if reason.strip() else ""
    return gate_comment(f"Rejected: cancelled in deploybot by {who}{said}. {link}")


def gate_not_deploying(why: str, link: str) -> str:
    return gate_comment(f"Rejected by deploybot: {' '.join(why.split())} {link}")


def gate_unknown(repository: str, environment: str) -> str:
    return gate_comment(
        f"Rejected by deploybot: no [[github_environments]] rule in deploybot.toml maps {repository}'s "
        f"environment {environment!r} to a deploybot environment, so nobody may approve it (fail closed)."
    )


def gate_link(public_url: str | None, thread_id: str) -> str:
    return f"{public_url}/console/threads/{thread_id}" if public_url else f"(deploybot thread {thread_id})"


def gate_answered(state: str, comment: str) -> str:
    return f"GitHub was answered {state}: {comment}"
