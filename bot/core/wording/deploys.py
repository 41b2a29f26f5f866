"""Deploys: what was asked for, and how it went."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.core.events import GitTag

__all__ = [
    "deploy_command_not_started", "deploy_could_not_run", "deploy_failed", "deploy_failed_saying", "deployed",
    "deployer_broke", "done", "interrupted_deploy", "invalid_tag", "listing_tags_failed", "newest_tags",
    "no_such_tag", "no_tags", "not_deploying", "stopped", "tag_lookup_failed", "tag_moved", "unknown_environment",
    "what_at_commit", "what_to_deploy",
]


def _exit_code(code: int | None) -> str:
    return f" (exit code {code})" if code is not None else ""


def what_to_deploy(service: str, tag: str, environment: str) -> str:
    return f"{service} {tag} to {environment}"


def what_at_commit(service: str, tag: str, commit: str, environment: str) -> str:
    return f"{service} {tag} ({commit[:7]}) to {environment}"


def unknown_environment(environment: str, known: Iterable[str]) -> str:
    return f"unknown environment {environment!r}; known environments: {', '.join(sorted(known))}"


def invalid_tag(tag: str) -> str:
    return f"{tag!r} is not a valid git tag name"


def no_such_tag(tag: str, newest: Sequence[str]) -> str:
    return f"tag {tag!r} does not exist; newest tags: {', '.join(newest) or 'none'}"


def tag_lookup_failed(tag: str, error: object) -> str:
    return f"looking up tag {tag} failed: {error}"


def listing_tags_failed(error: object) -> str:
    return f"listing tags failed: {error}"


def newest_tags(tags: Sequence[GitTag]) -> str:
    return "Tags, newest first: " + ", ".join(f"{t.name} ({t.commit[:7]})" for t in tags)


def no_tags() -> str:
    return "This repository has no tags."


def not_deploying(why: str) -> str:
    return f"not deploying: {why}"


def tag_moved(tag: str, commit: str, approved_commit: str) -> str:
    return f"tag {tag} now points to {commit[:7]}, but {approved_commit[:7]} was approved"


def deploy_command_not_started(command: str, where: str, why: str) -> str:
    """The deploy command is run in the service's repository: a relative path is looked up there."""
    return (
        f"could not start the deploy command {command!r} in {where}: {why} (the command runs in the service's "
        "repository, so a relative path like ./deploy.sh must be there; or give an absolute path)"
    )


def deploy_could_not_run(error: object) -> str:
    return f"the deploy could not run: {error}"


def deployer_broke(error: BaseException) -> str:
    return (
        f"the deployer failed while deploying ({type(error).__name__}: {error}); whether anything "
        "was deployed is unknown, so it was not tried again: please check"
    )


def interrupted_deploy(what: str, deploy_id: str) -> str:
    return (
        f"the deploy of {what} (deploy id {deploy_id}) was interrupted before "
        "its result was recorded; its outcome is unknown, so it was not run again"
    )


def deployed(what: str, url: str = "") -> str:
    return f"Deployed {what}." + (f" {url}" if url else "")


def deploy_failed(what: str, exit_code: int | None) -> str:
    return f"Deploying {what} failed{_exit_code(exit_code)}."


def deploy_failed_saying(what: str, exit_code: int | None, output: str) -> str:
    return f"Deploying {what} failed{_exit_code(exit_code)}: {output}"


def stopped(message: str) -> str:
    return f"Stopped: {message}"


def done() -> str:
    return "Done."
