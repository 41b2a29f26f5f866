"""Deploy from the console: the form (GET /console/deploy?service=&environment=&tag=&reason=)
offers the service's tags, newest first, and once a tag is chosen shows what it would change
against what is deployed there now; sending it (POST /console/deploy) starts a thread with the
exact chat command ("deploy api v1.4.0 to production (reason)"), as the signed-in person
(their session, checked by the front door; the form's CSRF token is their session's), so the
same rules apply there as to a chat request: approval, locks, freezes, CI. Input the deploy
path would refuse (an unknown service, environment or tag) is refused here first, in the
page, before anything is stored."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import model, offering
from bot.adapters.http.console.board import HISTORY_LIMIT
from bot.adapters.http.console.forms import back
from bot.adapters.http.console.routes import PREFIX, Console, Viewer
from bot.core import authority, commands, wording
from bot.core.events import DeployService
from bot.runtime.deploying import Deploying
from bot.runtime.ports import DeployerError
from bot.runtime.service import Forbidden, WrongState

MAX_NOTE = 300  # a reason is said in the command's parentheses, which take 300 characters


@dataclass(frozen=True)
class Asked:
    """What the form was given (the query, or the posted fields), cut to length."""

    service: str = ""
    environment: str = ""
    tag: str = ""
    reason: str = ""
    find: str = ""  # tags whose name holds this (beyond the newest the form shows)

    @classmethod
    def of(cls, fields: dict[str, str]) -> Asked:
        return cls(fields.get("service", "").strip()[:100], fields.get("environment", "").strip()[:100],
                   fields.get("tag", "").strip()[:200], " ".join(fields.get("reason", "").split())[:MAX_NOTE + 1],
                   fields.get("find", "").strip()[:100])


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.get(PREFIX + "/deploy")(console.route(deploy_form))
    r.post(PREFIX + "/deploy")(console.route(send))
    return r


async def deploy_form(console: Console, request: Request) -> Response:
    who = console.viewer(request)
    return await _page(console, request, who, Asked.of(dict(request.query_params)))


async def send(console: Console, request: Request) -> Response:
    """Start the thread, as the person; a refusal is said in the form, nothing stored."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    asked = Asked.of(fields)
    who.starts()
    try:
        said = await _command(console, who, asked, fields.get("commit", "")[:64])
    except offering.Refusal as e:
        return await _page(console, request, who, asked, str(e))
    thread = await console.launch(said, who)
    return back({}, f"{PREFIX}/threads/{thread.id}", "deploy")


async def _command(console: Console, who: Viewer, asked: Asked, shown: str) -> str:
    """The exact command for what was asked, once the deploy path would take it."""
    if not asked.tag:
        raise offering.Refusal(wording.deploy_needs_a_tag())
    if "(" in asked.reason or ")" in asked.reason:
        raise offering.Refusal(wording.reason_in_parentheses())
    if commands.asks(asked.reason):  # a question is never a command that changes anything
        raise offering.Refusal(wording.reason_asks())
    if len(asked.reason) > MAX_NOTE:
        raise offering.Refusal(f"the reason is longer than {MAX_NOTE} characters")
    deploying = console.parts.deploying
    step = offering.step_for(deploying, asked.service, asked.tag, asked.environment)
    commit = await offering.commit_of(deploying, step)
    if shown and shown != commit:  # the tag was moved since the preview: what was shown is not what would go
        raise WrongState(f"tag {step.tag} now names {commit[:7]}, not {shown[:7]} as previewed: preview it again")
    refused = authority.why_not(console.policy, who.identity, authority.Ask(step.environment))
    if refused:
        raise Forbidden(refused)
    said = commands.deploy_text(step.service, step.tag, step.environment, asked.reason)
    parsed = commands.parse(said, console.policy.catalog)
    if not (isinstance(parsed, DeployService) and (parsed.service, parsed.tag, parsed.environment, parsed.reason)
            == (step.service, step.tag, step.environment, asked.reason or None)):
        raise offering.Refusal(f"this cannot be said as one deploy command: {said!r}")
    return said


async def _page(console: Console, request: Request, who: Viewer, asked: Asked, error: str = "") -> Response:
    """The form for `asked`: its tags, and the preview once a tag is chosen (or why not)."""
    policy, deploying = console.policy, console.parts.deploying
    service = policy.catalog.find(asked.service) if asked.service else None
    if asked.service and service is None:
        error = error or wording.unknown_service(asked.service, policy.catalog.names)
    if asked.environment and asked.environment not in policy.environments:
        error = error or wording.unknown_environment(asked.environment, policy.environments)
    current = None
    if service and asked.environment in policy.environments:
        history = await console.parts.history.recent(asked.environment, HISTORY_LIMIT, service=service)
        current = model.current_of(history, service)
    tags, tags_error = await _tags(deploying, service, current.tag if current else "", asked.find)
    preview = None
    if asked.tag and not error:
        try:
            preview = await _preview(console, asked, who)
        except offering.Refusal as e:
            error = str(e)
    return console.render(
        request, "deploy_form.html", 422 if error else 200, asked=asked, service=service or "", tags=tags,
        tags_error=tags_error, current=current, preview=preview, error=error,
        services=policy.catalog.names, environments=model.ordered(policy.environments, policy),
        may_deploy=who.may_start, max_note=MAX_NOTE, tags_shown=offering.TAGS_SHOWN,
    )


async def _tags(deploying: Deploying, service: str | None, current: str,
                find: str) -> tuple[list[offering.Offered], str]:
    if not service or service not in deploying.deployers:
        return [], ""
    versions = deploying.deployers[service]
    try:
        return await offering.offered(service, versions, current, find), ""
    except DeployerError as e:
        return [], wording.tags_unreadable(service, e)


async def _preview(console: Console, asked: Asked, who: Viewer) -> offering.Preview:
    deploying = console.parts.deploying
    step = offering.step_for(deploying, asked.service, asked.tag, asked.environment)
    commit = await offering.commit_of(deploying, step)
    return await offering.preview(deploying, step, commit, who.identity, console.service.clock())
