"""What the board's buttons ask for an environment (or one service there): Lock and Unlock,
Stop and Resume deploys (for one environment, or all), Roll back, Promote. Each is the exact chat
command, launched as the person, so the worker asks the policy again where every such
command is carried out; asking it here first only refuses a forged form with a 403."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.adapters.http.console import model
from bot.adapters.http.console.board import HISTORY_LIMIT
from bot.adapters.http.console.forms import Page, back, reason, until
from bot.adapters.http.console.routes import MAX_REASON_CHARS, PREFIX, Console, Viewer
from bot.core import authority, commands, wording
from bot.core.events import ResumeDeploys, StopDeploys
from bot.core.freeze_windows import ALL
from bot.core.policy import lock_owner
from bot.runtime import promoting
from bot.runtime.ports import Lock
from bot.runtime.service import Forbidden, Invalid, WrongState


def router(console: Console) -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.post(PREFIX + "/environments/{environment}/lock")(console.route(lock))
    r.post(PREFIX + "/environments/{environment}/unlock")(console.route(unlock))
    r.post(PREFIX + "/environments/{environment}/services/{service_name}/lock")(console.route(lock_service))
    r.post(PREFIX + "/environments/{environment}/services/{service_name}/unlock")(console.route(unlock_service))
    r.post(PREFIX + "/environments/{environment}/stop")(console.route(stop))
    r.post(PREFIX + "/environments/{environment}/resume")(console.route(resume))
    r.post(PREFIX + "/stop")(console.route(stop_all))
    r.post(PREFIX + "/resume")(console.route(resume_all))
    r.post(PREFIX + "/environments/{environment}/services/{service_name}/rollback")(console.route(roll_back))
    r.post(PREFIX + "/environments/{environment}/services/{service_name}/promote")(console.route(promote))
    return r


# --- locks ------------------------------------------------------------------------------------


async def lock(console: Console, request: Request, environment: str) -> Response:
    return await _lock(console, request, environment, "")


async def unlock(console: Console, request: Request, environment: str) -> Response:
    return await _unlock(console, request, environment, "")


async def lock_service(console: Console, request: Request, environment: str, service_name: str) -> Response:
    return await _lock(console, request, environment, service_name)


async def unlock_service(console: Console, request: Request, environment: str, service_name: str) -> Response:
    return await _unlock(console, request, environment, service_name)


async def _lock(console: Console, request: Request, environment: str, service_name: str) -> Response:
    """`lock ENV[/SERVICE]: REASON`, so the lock is set (and checked again) where every lock is,
    and recorded."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    _known(console, environment, service_name)
    why = reason(fields, MAX_REASON_CHARS)
    refused = authority.why_not(console.policy, who.identity, authority.Lock(environment))
    if refused:
        raise Forbidden(refused)
    await console.launch(f"lock {wording.lock_target(environment, service_name)}: {why}", who)
    return back(fields, PREFIX + "/", "lock")


async def _unlock(console: Console, request: Request, environment: str, service_name: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    _known(console, environment, service_name)
    where = wording.lock_target(environment, service_name)
    held = await console.parts.locks.held(environment, [service_name] if service_name else [])
    holder = next((lock for lock in held if lock.service == service_name), None)
    if holder is None:
        raise WrongState(wording.not_locked(where))
    refused = authority.why_not(console.policy, who.identity,
                                authority.Unlock(environment, holder.owner, where, holder.by()))
    if refused:
        raise Forbidden(refused)
    await console.launch(unlock_command(where, holder, who, fields), who)
    return back(fields, PREFIX + "/", "unlock")


def unlock_command(where: str, holder: Lock, who: Viewer, fields: dict[str, str]) -> str:
    """`unlock WHERE`; someone else's lock, taken on purpose, only with a reason they are told
    (`--force: REASON`)."""
    if not (holder.owner.startswith("manual:") and holder.owner != lock_owner(who.identity)):
        return f"unlock {where}"
    why = " ".join(fields.get("reason", "").split())[:MAX_REASON_CHARS]
    if not why:
        raise Page(400, "Not valid", wording.take_with_force(where, holder.by()))
    return f"unlock {where} --force: {why}"


def _known(console: Console, environment: str, service_name: str) -> None:
    console.known_environment(environment)
    if service_name:
        console.known_service(service_name, environment)


# --- stop the line ----------------------------------------------------------------------------


async def stop(console: Console, request: Request, environment: str) -> Response:
    return await _stop(console, request, environment)


async def resume(console: Console, request: Request, environment: str) -> Response:
    return await _resume(console, request, environment)


async def stop_all(console: Console, request: Request) -> Response:
    return await _stop(console, request, ALL)


async def resume_all(console: Console, request: Request) -> Response:
    return await _resume(console, request, ALL)


async def _stop(console: Console, request: Request, scope: str) -> Response:
    """Stop the line for `scope` (an environment, or ALL) with the exact chat command, as
    Lock does: `stop deploys to ENV [until WHEN]: REASON`, `stop all deploys ...`."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    if scope != ALL:
        console.known_environment(scope)
    why = reason(fields, MAX_REASON_CHARS)
    ends = until(fields.get("until", ""))
    _may_stop(console, who, scope)
    if ends is not None and ends <= console.service.clock():
        raise Invalid(wording.until_in_the_past(ends))
    said = commands.stop_text(scope, why, f"{ends:%Y-%m-%dT%H:%M}Z" if ends else "")
    step = commands.parse(said, console.policy.catalog)
    if not (isinstance(step, StopDeploys) and (step.environment, step.reason, step.until) == (scope, why, ends)):
        raise Invalid(f"this reason cannot be said as one command: {why!r}")
    await console.launch(said, who)
    return back(fields, PREFIX + "/", "stop")


async def _resume(console: Console, request: Request, scope: str) -> Response:
    who = console.viewer(request)
    fields = await console.form(request, who)
    if scope != ALL:
        console.known_environment(scope)
    _may_stop(console, who, scope)
    assert console.freezes is not None  # _may_stop refuses without a store
    if not any(f.scope == scope for f in await console.freezes.current()):
        raise WrongState(wording.not_stopped_now(wording.freeze_scope(scope)))
    said = commands.resume_text(scope)
    step = commands.parse(said, console.policy.catalog)
    assert isinstance(step, ResumeDeploys) and step.environment == scope, said
    await console.launch(said, who)
    return back(fields, PREFIX + "/", "resume")


def _may_stop(console: Console, who: Viewer, scope: str) -> None:
    if console.freezes is None:
        raise WrongState(wording.cannot_stop_here())
    why = authority.why_not(console.policy, who.identity, authority.Stop(scope))
    if why:
        raise Forbidden(why)


# --- roll back --------------------------------------------------------------------------------


async def roll_back(console: Console, request: Request, environment: str, service_name: str) -> Response:
    """Start a thread that rolls the service back, as POST /deploys/rollback does: the
    exact command, so the same rules apply there (approval, locks, the re-check) and the
    thread says what it found. `deploy_id`, when posted: the deploy the button was shown
    on, which must still be the current one (else the rollback would undo another)."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    who.starts()
    console.known_environment(environment)
    console.known_service(service_name, environment)
    shown = fields.get("deploy_id", "")[:200]
    if shown:
        history = await console.parts.history.recent(environment, HISTORY_LIMIT, service=service_name)
        now_on = model.current_of(history, service_name)
        if now_on is None or now_on.deploy_id != shown:
            where = wording.lock_target(environment, service_name)
            raise WrongState(f"deploy {shown} is no longer what is on {where}: reload the page and look again")
    thread = await console.launch(commands.rollback_text(service_name, environment), who)
    return back({}, f"{PREFIX}/threads/{thread.id}", "rollback")


# --- promote ----------------------------------------------------------------------------------


async def promote(console: Console, request: Request, environment: str, service_name: str) -> Response:
    """Start a thread that promotes the service to the environment, as POST /deploys/promote
    does: the exact command, so the thread finds the commit (or says there is none) and the
    usual rules apply to its deploy. `commit`, when posted: the one the board's confirmation
    named, which must still be the one `promote` picks."""
    who = console.viewer(request)
    fields = await console.form(request, who)
    who.starts()
    console.known_environment(environment)
    console.known_service(service_name, environment)
    if console.policy.promotion.previous(service_name, environment) is None:
        raise Invalid(wording.no_promotion_order(service_name, environment))
    shown = fields.get("commit", "")[:64]
    if shown:  # what the board named must still be what `promote` picks, or it would send another
        deploying = console.parts.deploying
        now_picked = await promoting.pick(service_name, environment, console.parts.history, deploying.deployers,
                                          console.policy, console.service.clock())
        if now_picked is None or now_picked.commit != shown:
            raise WrongState(wording.promotion_moved(fields.get("tag", "")[:200], shown,
                                                     now_picked.tag if now_picked else "",
                                                     now_picked.commit if now_picked else ""))
    thread = await console.launch(commands.promote_text(service_name, environment), who)
    return back({}, f"{PREFIX}/threads/{thread.id}", "promote")
