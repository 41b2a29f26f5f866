"""Every sentence deploybot says to people, in one place. Pure: no I/O.

One small function per message, named for what it says. Which message applies is decided
by the module that calls it (agent, steps, deploying, service, policy, notices); only the
words live here. Dates are always shown in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.core.tokens import PERSONAL_TOKEN_PREFIX

if TYPE_CHECKING:  # only a type here: events imports people, which imports wording
    from bot.core.events import Change, GitTag


def utc(at: datetime) -> str:
    """A moment as people are told it, to the minute: `2026-12-24 18:00 UTC`."""
    return f"{at:%Y-%m-%d %H:%M} UTC"


def _exit_code(code: int | None) -> str:
    return f" (exit code {code})" if code is not None else ""


# --- asking: when the bot needs a human ----------------------------------------------


def no_llm(examples: Iterable[str]) -> str:
    return (
        "I can only follow exact commands because no LLM is configured. "
        "Try: " + "; ".join(f'"{c}"' for c in examples) + ". "
        "To let me understand free text, set LLM_PROVIDER (openai, anthropic or openai-generic), "
        "LLM_MODEL and LLM_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY), "
        "plus LLM_BASE_URL for an OpenAI-compatible server."
    )


def too_many_steps(max_steps: int) -> str:
    return (
        f"I have taken {max_steps} steps without finishing, so I am stopping here. "
        "What would you like me to do?"
    )


def too_many_errors(count: int, last: str) -> str:
    return (
        f"I ran into {count} errors in a row and stopped instead of trying again. "
        f"The last one: {last} How should I proceed?"
    )


def interrupted_ask(what: str, deploy_id: str) -> str:
    return (
        f"I was interrupted while deploying {what} (deploy id {deploy_id}) and do "
        "not know whether it finished. Please check, then tell me whether to try again."
    )


# --- approvals: who may decide, and whether an approval still holds -------------------


def rejected(user: str, text: str) -> str:
    return f"Not deployed: {user} rejected it ({text})." if text.strip() else f"Not deployed: {user} rejected it."


def bot_cannot(what: str) -> str:
    return f"the bot cannot {what}"


def shared_token_cannot(what: str) -> str:
    return (
        f"the shared API token cannot {what}: use a personal token (`python -m bot tokens create NAME`) "
        "or sign in (`python -m bot login-link NAME`); the shared token speaks for nobody in particular"
    )


def use_your_personal_token(person: str) -> str:
    return (
        f"{person} is a person of deploybot.toml: use your personal token (`python -m bot tokens create "
        f"{person}`) or sign in; the shared API token speaks for nobody in particular"
    )


def not_an_approver_here(who: str, where: str, approvers: str) -> str:
    return f"{who} is not an approver for {where}; {approvers} may approve"


def may_not_lock(who: str, where: str, lockers: str) -> str:
    return f"{who} may not lock {where}; {lockers} may"


def may_not_stop(who: str, where: str, lockers: str) -> str:
    return f"{who} may not stop or resume deploys to {where}; {lockers} may"


def may_not_cancel(who: str, environment: str) -> str:
    whose = f"{environment}'s approvers" if environment else "an approver"
    return f"{who} may not cancel this thread: only whoever asked for it or {whose} may"


def may_not_cancel_in_flight(who: str, environment: str) -> str:
    return (
        f"{who} may not cancel this thread while its deploy to {environment} runs or is verified: only "
        f"whoever may skip the verification there may (cancelling ends it unverified)"
    )


def not_yours_to_decide(why: str, deciders: str) -> str:
    """The terminal does not ask someone who may not decide: it says why, and who may."""
    return f"Waiting for approval from {deciders}; you cannot decide it: {why}."


def requester_cannot_approve(user: str) -> str:
    return f"{user} asked for this deploy and cannot also approve it"


def approved_in_another_thread() -> str:
    return "the approval was given in another thread (this one was forked); asking again"


def approval_does_not_match() -> str:
    return "the approved deploy does not match the step it guards"


def approval_expired(expires_at: datetime) -> str:
    return f"the approval expired at {utc(expires_at)}"


# --- deploys: what was asked for, and how it went --------------------------------------


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


# --- locks and "what's on" --------------------------------------------------------------


def deploy_lock_reason(service: str, tag: str) -> str:
    return f"deploying {service} {tag}"


def locked_by(who: str, since: datetime, reason: str) -> str:
    return f"by {who} since {utc(since)}: {reason}"


def lock_target(environment: str, service: str) -> str:
    return f"{service} in {environment}" if service else environment


def is_locked(environment: str, by: str) -> str:
    return f"{environment} is locked {by}"


def no_such_environment(environment: str, known: Iterable[str]) -> str:
    return f"There is no environment {environment!r} (known: {', '.join(sorted(known))})."


def already_locked(holder_description: str) -> str:
    return f"Already locked: {holder_description}."


def locked(environment: str, reason: str) -> str:
    return f"Locked {environment}: {reason}. No deploy to {environment} starts until it is unlocked."


def not_locked_by(why: str) -> str:
    return f"Not locked: {why}."


def not_locked(environment: str) -> str:
    return f"{environment} is not locked."


def not_unlocked(why: str) -> str:
    return f"Not unlocked: {why}."


def unlock_not_allowed(who: str, target: str, who_can: str, locked_by: str = "") -> str:
    """Whoever locked it unlocks plainly; anyone else who may lock takes it over only with
    --force and a reason, so the refusal says that command, not just who."""
    held = f" (locked {locked_by})" if locked_by else ""
    if who_can == "nobody":
        return f"{who} may not unlock {target}{held}; only whoever locked it may"
    return (
        f"{who} may not unlock {target}{held}; whoever locked it may, and {who_can} may take it over: "
        f'"unlock {target} --force: REASON"'
    )


def unlocked(environment: str, locked_by: str) -> str:
    return f"Unlocked {environment}; it had been locked {locked_by}."


def whats_on_line(
    service: str, tag: str, commit: str, at: datetime, approved_by: str | None, url: str | None
) -> str:
    """One service's line in "what's on"."""
    return (
        f"{service} {tag} ({commit[:7]}), deployed {utc(at)}"
        + (f", approved by {approved_by}" if approved_by else "")
        + (f", {url}" if url else "")
    )


def whats_on(environment: str, lines: Sequence[str]) -> str:
    return f"On {environment}: " + "; ".join(lines) + "."


def nothing_deployed(environment: str) -> str:
    return f"Nothing has been deployed to {environment} by deploybot yet."


def lock_note(holder_description: str) -> str:
    return f"Note: {holder_description}."


# --- refusals: raised as service.Refused, shown to whoever asked -------------------------


def empty_message() -> str:
    return "message must not be empty"


def empty_text() -> str:
    return "text must not be empty"


def no_thread(thread_id: str) -> str:
    return f"no thread {thread_id}"


def no_thread_in(thread_id: str, store: str) -> str:
    """The CLI's: which store it looked in, so a thread missing from the wrong one is plain."""
    return f"no thread {thread_id} in {store}"


def store_at(address: str, setting: str) -> str:
    return f"the store at {address} ({setting})"


def store_embedded(folder: str) -> str:
    return (f"the embedded store under {folder}: no REDIS_URL is set, so this is not the team's store "
            "unless its server runs with this folder")


def bad_status(statuses: Iterable[str]) -> str:
    return f"status must be one of {', '.join(statuses)}"


def bad_cursor() -> str:
    return "cursor is not one this listing gave (pass back next_cursor as it came)"


def not_json(why: str) -> str:
    """A request body that Python's parser reads but JSON does not have (bot.adapters.http.api.json_text)."""
    return f"the body is not JSON: {why}"


def not_a_json_number(constant: str) -> str:
    return f"{constant} is no number in JSON (send a number, or null)"


def lone_surrogate() -> str:
    return "a string holds half a surrogate pair (\\ud800 to \\udfff alone), which is no character"


def already_cancelled() -> str:
    return "the thread is already cancelled"


def nothing_to_cancel(ending: str) -> str:
    """Cancelling a finished thread: its outcome never changes."""
    return f"this thread is finished ({ending}); nothing to cancel"


def thread_cancelled() -> str:
    return "the thread was cancelled"


def fork_out_of_range(version: int) -> str:
    return f"at must be between 1 and {version}"


def fork_mid_deploy() -> str:
    return "cannot fork in the middle of a deploy; fork before it started or after its result"


def not_the_pending_approval(approval_id: str) -> str:
    return f"approval {approval_id} is not the pending one"


def reply_cannot_approve() -> str:
    return (
        "a reply cannot approve a deploy; use the Approve button, reply to the approval "
        "email, or send approve=true with the approval_id"
    )


def approval_id_required() -> str:
    return "approval_id is required with approve"


def no_such_approval(approval_id: str) -> str:
    return f"there is no approval {approval_id} in this thread"


def already_decided(approved: bool, user: str, at: datetime) -> str:
    verb = "approved" if approved else "rejected"
    return f"already {verb} by {user} at {at:%Y-%m-%d %H:%M:%S} UTC"


def no_longer_pending(approval_id: str) -> str:
    return f"approval {approval_id} is no longer pending"


def approval_expired_ask_again(approval_id: str, expires_at: datetime) -> str:
    return (
        f"approval {approval_id} expired at {utc(expires_at)}; "
        "reply with feedback and the bot will propose the deploy again"
    )


# --- notices: what channels say as events are recorded ("{who}": the channel names them) --


def deploying(what: str) -> str:
    return f"Deploying {what}…"


def deploying_something() -> str:
    return "Deploying…"


def cancelled_by_who(reason: str) -> str:
    return "Cancelled by {who}" + (f": {reason}" if reason else ".")


# --- services, rollback, change preview, CI checks --------------------------------------


def unknown_service(service: str, known: Iterable[str]) -> str:
    return f"unknown service {service!r}; known services: {', '.join(sorted(known))}"


def service_not_in(service: str, environment: str, environments: Sequence[str]) -> str:
    return f"{service} is not deployed to {environment}; it deploys to {', '.join(environments)}"


def tags_of(service: str, tags: Sequence[GitTag]) -> str:
    return f"{service}: " + (", ".join(t.name for t in tags) if tags else "no tags")


def nothing_to_roll_back(service: str, environment: str) -> str:
    return (
        f"There is nothing to roll {service} in {environment} back to: no earlier deploy there "
        "succeeded, is not marked faulty, and has a tag that still points to the same commit."
    )


def never_deployed(service: str, environment: str) -> str:
    return f"{service} has never been deployed to {environment} by deploybot, so there is nothing to roll back."


def no_rollback_of_rollback(service: str, environment: str, tag: str) -> str:
    return (
        f"{service} {tag} on {environment} is itself a rollback; I do not roll back a rollback. "
        f"Roll forward instead: deploy {service} TAG to {environment}."
    )


def rollback_overtaken(service: str, tag: str, environment: str, rolled_back: str) -> str:
    return (
        f"{service} {tag} was deployed to {environment} after this rollback was planned; it rolled "
        f"back {rolled_back}. Ask again: roll back {service} in {environment}"
    )


def rollback_reason(tag: str, current: str) -> str:
    return f"roll back from {current} to {tag}"


def rolled_back_lock_reason(tag: str, person: str) -> str:
    return f"rolled back from {tag} by {person}"


def rolled_back(what: str) -> str:
    return (
        f"Rolled back: deployed {what}. The deploy it replaced is marked faulty and will never be "
        "a rollback target again."
    )


def goes(change_ahead: int, change_behind: int) -> str:
    """How far a deploy moves, in plain words."""
    if change_ahead and change_behind:
        return f"{_commits(change_ahead)} ahead and {_commits(change_behind)} behind what is deployed (diverged)"
    if change_behind:
        return f"goes back {_commits(change_behind)}"
    if change_ahead:
        return f"{_commits(change_ahead)} ahead"
    return "the same commit as deployed now"


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def change_headline(from_tag: str, from_commit: str, to_commit: str, ahead: int, behind: int) -> str:
    if not from_commit:
        return f"nothing deployed there yet; {to_commit[:7]} would be the first"
    return f"from {from_tag or '?'} ({from_commit[:7]}) to {to_commit[:7]}: {goes(ahead, behind)}"


def change_unknown(why: str) -> str:
    return f"what it changes is unknown: {why}"


def more_commits(n: int) -> str:
    return f"… and {_commits(n)} more"


def checks_failing(commit: str, failing: Sequence[str], pending: Sequence[str]) -> str:
    parts = []
    if failing:
        parts.append(f"failing: {', '.join(failing)}")
    if pending:
        parts.append(f"still running: {', '.join(pending)}")
    return (
        f"CI checks on {commit[:7]} are not all green ({'; '.join(parts)}). An approver may deploy "
        'anyway with "deploy anyway: REASON".'
    )


def checks_unreadable(commit: str, why: object) -> str:
    return f"could not read the CI checks on {commit[:7]}: {why}"


def nothing_to_force() -> str:
    return "There is no blocked deploy in this thread to deploy anyway."


def may_not_force(who: str, environment: str) -> str:
    return f"{who} may not deploy past the checks to {environment}: only its approvers may."


def forced_note(reason: str, by: str) -> str:
    return f"deployed anyway by {by}: {reason}"


def change_lines(change: Change) -> list[str]:
    """A change preview for people: a headline, then a line per commit ("abc1234 subject
    (author)"), newest first. Every channel renders these lines, escaping them its way."""
    if change.unknown:
        return [change_unknown(change.unknown)]
    lines = [change_headline(change.from_tag, change.from_commit, change.to_commit, change.ahead, change.behind)]
    if change.commits:
        lines.append("commits removed:" if change.behind and not change.ahead else "commits added:")
        lines += [f"{c.sha[:7]} {c.subject}" + (f" ({c.author})" if c.author else "") for c in change.commits]
        hidden = (change.behind if change.behind and not change.ahead else change.ahead) - len(change.commits)
        if hidden > 0:
            lines.append(more_commits(hidden))
    return lines


def change_in_one_line(change: Change) -> str:
    """The change preview on one line (a transcript's, a log's): "; " between its lines, but
    a heading ("commits removed:") runs on into the first commit it heads."""
    joined = ""
    for line in change_lines(change):
        joined += line if not joined else (f" {line}" if joined.endswith(":") else f"; {line}")
    return joined


def rollback_proposal(service: str, environment: str, from_tag: str, to_tag: str) -> str:
    """"roll back api in production from v1.1.0 to v1.0.3": what a rollback does."""
    return f"roll back {service} in {environment} " + (f"from {from_tag} to {to_tag}" if from_tag else f"to {to_tag}")


# --- triggers and schedules: threads started by events, not people (bot/core/triggers.py) -------


def release_published(tag: str, sender: str) -> str:
    return f"release {tag} published by {sender}"


def tag_pushed(tag: str, sender: str) -> str:
    return f"tag {tag} pushed by {sender}"


def workflow_succeeded(name: str, branch: str, sha: str, sender: str) -> str:
    return f"{name} succeeded on {branch} at {sha[:7]}, run by {sender}"


def triggered_deploy(service: str, ref: str, environment: str, note: str) -> str:
    """The first message of a thread a GitHub delivery starts, as if its sender had asked."""
    return f"deploy {service} {ref} to {environment} ({note})"


def started_by(source: str, who: str, text: str) -> str:
    """The message a notify target gets when a trigger or schedule starts a thread."""
    return f"{who} ({source}): {text}"


def slash_command_help(command: str, examples: Iterable[str]) -> str:
    return (
        f"`{command} ...` asks deploybot in this channel, like a mention. Try: "
        + "; ".join(f"`{command} {c.removeprefix('deploy ')}`" if c.startswith("deploy ") else f"`{command} {c}`"
                    for c in examples)
        + f"; `{command} status` lists what is running or waiting here."
    )


def slash_command_status(count: int) -> str:
    """The heading of `/deploy status`; the channel lists the threads under it (status_line)."""
    if not count:
        return "Nothing is running or waiting for anyone right now."
    return f"Running or waiting ({count}, newest first):"


def status_line(thread_id: str, status: str, text: str) -> str:
    return f"• {text} ({status.replace('_', ' ')}, thread {thread_id})"


def delivery_kept_failing(url: str, attempts: int, error: str) -> str:
    return f"the webhook {url} failed {attempts} times: {error}"


# --- approvals over time: reminders, expiry, escalation, several approvers, the queue -------


def take_with_force(target: str, locked_by: str) -> str:
    return (
        f"{target} is locked {locked_by}. To take someone else's lock, give a reason: "
        f'"unlock {target} --force: REASON" (they are told).'
    )


def lock_taken(target: str, locked_by: str, reason: str) -> str:
    return f"Unlocked {target}, taking the lock held {locked_by}: {reason}. They have been told."


def lock_taken_from_you(target: str, by: str, reason: str) -> str:
    return f"{by} lifted your lock on {target}: {reason}"


def undeclared_environment(environment: str, known: Iterable[str], file_name: str, file_names_them: bool) -> str:
    """A service names an environment deploybot does not know: say where environments come
    from (the file's [environments.*] once it has any, else ENVIRONMENTS)."""
    how = (
        f"declare it with [environments.{environment}] in {file_name}" if file_names_them
        else f"list it in ENVIRONMENTS or declare it with [environments.{environment}] in {file_name}"
    )
    return f"unknown environment {environment!r} (known: {', '.join(sorted(known))}); {how}"


def approvals_need_people(environment: str, required: int) -> str:
    return (
        f"{environment} needs {required} approvals from different people, so its approvers must be people "
        "of deploybot.toml, or come from one channel only (all Slack ids in APPROVERS, or all addresses in "
        "APPROVER_EMAILS): not '*', nor Slack ids and addresses together, which could be one person twice"
    )


def freeze_scope(scope: str) -> str:
    return "every environment" if scope == "*" else scope


def _until(until: datetime | None) -> str:
    return f"until {utc(until)}" if until else "until someone resumes them"


def deploys_stopped(where: str, reason: str, until: datetime | None) -> str:
    return f"Stopped all deploys to {where} {_until(until)}: {reason}. Deploys already running finish."


def deploys_resumed(where: str) -> str:
    return f"Deploys to {where} may start again."


def not_stopped_now(where: str) -> str:
    return f"Deploys to {where} were not stopped (a scheduled freeze in deploybot.toml ends by itself)."


def not_stopped(why: str) -> str:
    return f"Not stopped: {why}."


def cannot_stop_here() -> str:
    return "Stopping deploys is not possible from here."


def until_in_the_past(until: datetime) -> str:
    return f"{utc(until)} has passed already; give a time to come, or none."


def frozen(environment: str, reason: str, until: datetime | None, source: str) -> str:
    return (
        f"{environment} is frozen {_until(until)} ({source}): {reason}. An approver may deploy anyway "
        '("deploy anyway: REASON").'
    )


def frozen_waits(environment: str, reason: str, until: datetime | None) -> str:
    return f"{environment} is frozen {_until(until)}: {reason}"


def waiting_for_turn(position: int) -> str:
    return f"{position - 1} earlier deploy{'s' if position != 2 else ''} waiting for their turn"


def expired_not_deployed(expires_at: datetime) -> str:
    return f"this approval expired at {utc(expires_at)}; nothing was deployed"


def already_approved_by_you(count: int, required: int) -> str:
    more = max(required - count, 1)
    return f"you have approved already; it needs {more} more approval{'s' if more != 1 else ''} from someone else"


def approval_progress(given: Sequence[str], required: int) -> str:
    """"1 of 2: approved by bob": how far a request that needs several approvals got."""
    return f"{len(given)} of {required}: approved by {', '.join(given)}" if given else f"0 of {required} approvals"


def rejected_notice(gave_feedback: bool, model: bool) -> str:
    """What the console says after a rejection: only a model re-plans, and only from
    feedback someone gave; without a model the thread ends there."""
    if not model:
        return "Rejected: nothing is deployed, and nothing more happens until someone asks again."
    if not gave_feedback:
        return "Rejected: nothing is deployed; the model reads the rejection and answers in this thread."
    return "Rejected: the model re-plans from your feedback."


def approvals_needed(required: int) -> str:
    return f"{required} approval{'s' if required != 1 else ''}"


def approval_rules_changed(what: str, required: int, who: str, count: int) -> str:
    """A pending approval put under rules that changed since it was asked (`who`: who may
    decide, as people.describe words them; `count`: the approvals that still count)."""
    return (
        f"The rules changed since the approval to deploy {what} was asked: it now needs "
        f"{approvals_needed(required)}, from {who} ({count} so far)."
    )


def approvers_needed(required: int, names: Sequence[str]) -> str:
    """Who decides, and how many of them must: "alice or erin", "2 of alice, bob, carol"."""
    if required <= 1:
        return one_of(names)
    return f"{required} of {', '.join(names)}" if names else f"{required} approvals from nobody"


def rules_then(required: int, names: Sequence[str]) -> str:
    """An approval's rules as they were when it was decided (not today's): who could decide, how many."""
    if names:
        return approvers_needed(required, names)
    return f"{required} approval{'s' if required != 1 else ''} (who could decide was not recorded then)"


def no_approval_needed() -> str:
    return "no approval needed"


# --- the console's confirmations: what a destructive button will do, said before it does it ---


def confirm_rollback(service: str, environment: str, from_tag: str, to_tag: str) -> str:
    return (f"Roll back {service} in {environment} from {from_tag} to {to_tag}? A new thread asks for approval "
            "where it must, and the service stays locked there afterwards.")


def confirm_cancel() -> str:
    return "Cancel this thread? Nothing more happens in it: a deploy waiting here is dropped. It cannot be undone."


def confirm_stop(where: str) -> str:
    return f"Stop every deploy to {where}? None starts until someone resumes them (or until the time given)."


def confirm_take(target: str, holder: str) -> str:
    return f"Take the lock on {target} from {holder}? {holder} is told, with your reason."


def approval_expired_notice(what: str, expires_at: datetime) -> str:
    return f"The approval to deploy {what} expired at {utc(expires_at)}; nothing was deployed."


def not_asking_again(what: str, expires_at: datetime) -> str:
    return (
        f"{approval_expired_notice(what, expires_at)} I am not asking for it again by myself: "
        "ask me again if it should still be deployed."
    )


def reminder(what: str, deciders: str, expires_at: datetime) -> str:
    return (
        f"Reminder: deploying {what} still waits for approval from {deciders}. It expires at "
        f"{utc(expires_at)}."
    )


def escalated(what: str, to: str) -> str:
    return f"Nobody has decided on deploying {what} yet, so I have asked {to} too."


def queued(what: str, behind: str, position: int) -> str:
    return f"Approved; deploying {what} waits in line (number {position}): {behind}. It starts when it is its turn."


# --- channels: approvals over time -------------------------------------------------------


def one_of(pending: Sequence[str]) -> str:
    """["bob", "carol", "erin"] -> "bob, carol or erin": who may still decide."""
    if not pending:
        return "nobody"
    return pending[0] if len(pending) == 1 else f"{', '.join(pending[:-1])} or {pending[-1]}"


def approval_still_open(given: Sequence[str], required: int) -> str:
    """A request that needs several approvals, after one that was not the last."""
    more = max(required - len(given), 1)
    return (
        f"{approval_progress(given, required)}; it needs {more} more approval{'s' if more != 1 else ''} "
        "from someone else."
    )


def approved_by_so_far(who: str, given: Sequence[str], required: int) -> str:
    """The requester's update after an approval that did not yet decide."""
    return f"Approved by {who}. {approval_still_open(given, required)}"


def approved_by_all(who: str, given: Sequence[str], required: int) -> str:
    """The requester's update after the approval that made the number needed."""
    return f"Approved by {who}. {approval_progress(given, required)}."


def expired_in_place(expires_at: datetime) -> str:
    """What an approval message says once it lapsed (its buttons are gone)."""
    return f"Expired at {utc(expires_at)}, not deployed: nobody decided in time."


def escalated_to_you(what: str, expires_at: datetime) -> str:
    """The top of the approval message (a Slack DM, an email) someone gets when asked too."""
    return (
        f"Nobody has decided on deploying {what} yet, so you are asked too. The request expires at "
        f"{utc(expires_at)}."
    )


def reply_to_decide() -> str:
    """The end of a follow-up mail in an approval email thread (a reminder, progress)."""
    return "Reply APPROVE to this email to deploy, or reply with what should change."


def no_longer_asked(what: str) -> str:
    """A follow-up mail to an approver once the request is closed by expiry."""
    return f"You need not decide on deploying {what} any more."


def the_approvers() -> str:
    """Who a reminder names when the channel does not know them one by one."""
    return "the approvers"


# --- an unproven email sender: "Did you send this?" ---------------------------------------


def confirm_sender_question(expires_at: datetime, minutes: int) -> str:
    """The top of the mail that asks whoever an email named whether they sent it."""
    return (
        "Did you send this? deploybot got the request below in your name, and nothing proved "
        "it came from you, so nothing is done until you confirm. "
        f"Reply YES to confirm it before {utc(expires_at)}; if you did not send it, "
        "ignore this email and nothing will be done. "
        f"Until you answer, and for {minutes} minutes in any case, other requests in your name "
        "that nothing proves are ignored."
    )


def sender_confirmation_waiting() -> str:
    """Why an unproven request is refused, unanswered: another in the same name waits."""
    return (
        "a request in this sender's name already waits for them to confirm it: no other is "
        "taken until they do or it expires"
    )


def sender_asked_recently(minutes: int) -> str:
    """Why an unproven request is refused, unanswered: its sender was just asked about another."""
    return (
        f"this sender was asked to confirm a request less than {minutes} minutes ago: "
        "no other is taken until then"
    )


def sender_confirmation_pending(address: str, expires_at: datetime) -> str:
    return (
        f"Waiting for {address} to confirm they sent this (a reply to the confirmation email); "
        f"nothing is done until then. It expires at {utc(expires_at)}."
    )


def sender_confirmed() -> str:
    return "Confirmed: you sent this request. I am on it."


def sender_not_confirmed() -> str:
    return "the request is not confirmed: to confirm it, reply YES (and nothing else) to the confirmation email"


def confirmation_for_another_request() -> str:
    return (
        "the confirmation code is for another request than the email you replied to: "
        "reply to the confirmation email itself"
    )


def sender_confirmation_closed(confirmed: bool) -> str:
    return "this request was confirmed already" if confirmed else \
        "this confirmation expired; nothing was done: send the request again"


def sender_confirmation_expired(expires_at: datetime) -> str:
    return (
        f"Nobody confirmed sending this request by {utc(expires_at)}, "
        "so it was dropped; nothing was done."
    )


# --- agents (MCP): AI agents that may ask for deploys, never approve them -------------------


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


# --- `python -m bot mcp`, the agent's stdio bridge to /mcp ---


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


# --- promotion in order (bot/core/promotion.py) -------------------------------------------


def how_long(delta: timedelta) -> str:
    """A duration for people, in words: "45 seconds", "1 minute", "2 hours", "3 days"."""
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def short_commit(tag: str, commit: str) -> str:
    return f"{tag} ({commit[:7]})"


def not_promoted(
    tag: str, commit: str, previous: str, missing: str, soak: timedelta, since: datetime | None,
    last_good: tuple[str, datetime] | None, now: datetime,
) -> str:
    """Why a deploy to a later environment is refused: what is missing in `previous`, the
    newest commit that has it (`last_good`: its tag and when it was deployed there), and the
    way past it."""
    what = short_commit(tag, commit)
    reason = {
        "faulty": f"{what} was marked faulty in {previous}",
        "soaking": (
            f"{what} has been in {previous} for {how_long(now - since) if since else 'no time'}, "
            f"less than the {how_long(soak)} it must soak there"
        ),
        "unverified": f"{what} has not been verified in {previous}",
    }.get(missing, f"{what} has not been deployed to {previous}")
    passed = (
        f"the newest commit that has is {last_good[0]}, {how_long(now - last_good[1])} ago" if last_good
        else "no commit has yet"
    )
    return f"{reason}; {passed}. An approver may say \"deploy anyway: REASON\"."


def promoted_from(previous: str, tag: str, at: datetime, now: datetime) -> str:
    """The reason of a deploy `promote` proposes."""
    return f"promoted: {tag} passed {previous} {how_long(now - at)} ago"


def nothing_to_promote(service: str, environment: str, previous: str) -> str:
    return f"Nothing to promote: no commit of {service} has passed {previous} yet, so none may go to {environment}."


def no_promotion_order(service: str, environment: str) -> str:
    return (
        f"{service} has no environment before {environment} in its promotion order "
        "(deploybot.toml's promotion): deploy a tag instead"
    )


def order_unknown(unknown: Sequence[str], known: Iterable[str]) -> str:
    return f"{', '.join(unknown)}: not an environment deploybot knows ({', '.join(sorted(known))})"


def order_repeats() -> str:
    return "names an environment twice"


def not_a_duration(text: str) -> str:
    return f"{text!r} is not a duration like 90s, 30m, 2h or 1d"


# --- delivery metrics (the console's metrics page) ----------------------------------------------


def span(seconds: float | None) -> str:
    """A duration for people, in its two largest units: `1 d 4 h`, `3 h 20 min`, `45 s`; `–` for none."""
    if seconds is None:
        return "–"
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0 s"


def per_day(rate: float) -> str:
    return f"{rate:.2f} a day" if rate < 10 else f"{rate:.0f} a day"


def share(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction * 100:.0f}%"


# --- the console's deploy form and matrix (bot/adapters/http/console/deploy_form.py, matrix.py) --


def approval_needed(required: int, deciders: str) -> str:
    """Who must approve a deploy the console's form would ask for: "needs 2 approvals from alice or erin"."""
    return f"needs {required} approvals from {deciders}" if required > 1 else f"needs an approval from {deciders}"


def reason_in_parentheses() -> str:
    return "a reason cannot hold ( or ): it is said in parentheses after the deploy command"


def reason_asks() -> str:
    return "a reason cannot hold a question mark: a question is never taken as a command"


def deploy_needs_a_tag() -> str:
    return "choose a tag to deploy"


def tags_unreadable(service: str, error: object) -> str:
    return f"the tags of {service} could not be read: {error}"


# --- verification after a deploy (bot/core/verification.py) ---------------------------------


def verifying(what: str, ends_at: datetime, checks: int) -> str:
    return (
        f"Verifying {what}: {checks} check{'s' if checks != 1 else ''} every round until {utc(ends_at)}; "
        "the lock stays held until then. Say `verify now` to end it early if every check holds, "
        "or `skip verification: REASON` (approvers)."
    )


def check_line(name: str, ok: bool | None, value: str) -> str:
    state = "holds" if ok else ("no answer" if ok is None else "FAILS")
    return f"{name}: {value} ({state})"


# What a check answered (bot/adapters/probes, bot/runtime/verifying.py): a check's value, shown
# beside its name. Whatever starts "no answer" could not be evaluated: never a pass.


def check_unreachable(site: str, error: str) -> str:
    return f"no answer from {site}: {error}"


def check_not_in_time(seconds: float) -> str:
    return f"no answer within {seconds:g}s, the round's deadline"


def check_too_big(site: str, limit: int) -> str:
    return f"no answer: {site} sent more than {limit / 1_000_000:g} MB, so it was not read further"


def query_refused(site: str, status: int) -> str:
    return f"no answer: {site} said HTTP {status}"


def query_failed(message: str) -> str:
    return f"no answer: the query failed ({message[:200]})"


def query_not_a_number(result_type: str) -> str:
    return f"no answer: a {result_type} is not a number"


def query_without_result() -> str:
    return "no answer: the query has no result"


def query_not_finite(value: str) -> str:
    return f"no answer: the query answered {value}, which meets no condition"


def http_check_status(status: int, expected: int) -> str:
    return f"HTTP {status}, not {expected}"


def http_check_without(status: int, contains: str) -> str:
    return f"HTTP {status} without {contains!r}"


def http_check_answered(status: int) -> str:
    return f"HTTP {status}"


def verified(what: str, early_by: str = "") -> str:
    how = f" (ended early by {early_by}: every check held)" if early_by else ": every check held for the whole bake"
    return f"Verified {what}{how}. The lock is released."


def verification_failed(what: str, check: str, value: str) -> str:
    return f"Verification of {what} FAILED: {check} at {value}. The deploy is marked faulty."


def verification_skipped(what: str, by: str, reason: str) -> str:
    return f"Verification of {what} skipped by {by}: {reason}. The lock is released."


def verify_now_refused(check: str, value: str) -> str:
    return f"Not verified yet: {check} does not hold right now ({value}). The bake goes on."


def may_not_skip_verification(who: str, environment: str) -> str:
    return f"{who} may not skip verification in {environment}: only its approvers may."


def automatic_rollback_reason(check: str, value: str) -> str:
    return f"automatic rollback by deploybot: verification failed, {check} at {value}"


def rollback_past_freeze(reason: str) -> str:
    return f"automatic rollback past a freeze ({reason})"


def verification_rollback_proposed() -> str:
    return "A rollback is proposed: it needs an approval."


# --- the GitHub deployment gate (bot/adapters/channels/github_gate.py): GitHub shows these
# comments on the workflow run, to whoever may read the repository.

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
