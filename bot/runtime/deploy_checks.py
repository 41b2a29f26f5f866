"""Before a deploy: asking for approval, and the facts every check reads (the commit a tag
points to, what is deployed there now, what the deploy changes, the deploy rules' facts)."""

from __future__ import annotations

from datetime import datetime

from bot.core import authority, deploy_rules, wording
from bot.core.events import PREVIEW_COMMITS, ApprovalRequested, Change, Deploy, Error, Event
from bot.core.people import Identity
from bot.core.policy import args_hash
from bot.core.thread import NOBODY, Thread
from bot.runtime import gathering
from bot.runtime.deploy_parts import Parts, _field, _refused
from bot.runtime.ports import DeployerError, DeployRecord, Versions


class Checks(Parts):
    """Asking for approval, and what is checked before it and before a deploy."""

    # --- before: asking for approval ------------------------------------------------

    async def ask_approval(self, thread: Thread, step: Deploy, now: datetime) -> Event:
        checked = await self._check(step, thread)
        if isinstance(checked, Error):
            return checked
        holder = await self.locks.holder(step.environment, step.service)  # don't ask for what cannot start
        if holder:
            return Error(kind="locked", step_id=step.id, message=wording.not_deploying(holder.describe()))
        refused = deploy_rules.first(await self.gather(step, checked, now, thread), self.rules)
        if refused is not None:
            return _refused(step, refused)
        instruction = thread.instruction_for(step.id)
        asking = thread.authority(instruction)
        # Whoever acts on the request asks: in a fork, the forker asks again what was asked then.
        requested_by = asking.principal if asking != NOBODY else instruction.principal if instruction else ""
        return ApprovalRequested(
            step_id=step.id,
            thread_id=thread.id,
            args_hash=args_hash(step.service, step.tag, step.environment),
            service=step.service,
            tag=step.tag,
            commit=checked,
            environment=step.environment,
            requested_by=requested_by,
            asked_by=self.policy.directory.display(requested_by) if requested_by else "",
            requesters=thread.requesters(),
            reason=step.reason,
            expires_at=now + self.policy.approval_ttl,
            change=await self.change(step, checked),
            required=self.policy.approval_rules(step.environment).required,
            approvers=list(self.policy.approval_rules(step.environment).approvers or ()),
            rollback_of=_field(step, "rollback_of"),
            force=_field(step, "force"),
            forced_by=_field(step, "forced_by"),
        )

    async def current(self, step: Deploy) -> DeployRecord | None:
        """What is deployed now for the step's service in its environment: its newest deploy
        there that succeeded."""
        return await gathering.current(self.history, step)

    async def change(self, step: Deploy, commit: str) -> Change:
        """What deploying `commit` changes against what is deployed there now."""
        current = await self.current(step)
        if current is None:
            return Change(to_commit=commit)
        base = Change(from_tag=current.tag, from_commit=current.commit, to_commit=commit)
        try:
            versions: Versions = self.deployers[step.service]
            found = await versions.compare(current.commit, commit, PREVIEW_COMMITS)
        except DeployerError as e:
            return base.model_copy(update={"unknown": str(e)[:300]})
        commits = found.added if found.ahead else found.removed
        return base.model_copy(update={"ahead": found.ahead, "behind": found.behind, "commits": list(commits)})

    async def gather(self, step: Deploy, commit: str, now: datetime, thread: Thread | None = None,
                     asking: Identity | None = None) -> deploy_rules.Facts:
        """What the deploy rules read of deploying `commit` as `step` now (bot/runtime/gathering.py)."""
        return await gathering.gather(self, step, commit, now, thread, asking)

    async def _overtaken(self, step: Deploy) -> Error | None:
        """A rollback looked at again under the lock: a deploy that finished while this one
        waited for it is what the rollback would now replace (deploy_rules.rollback_still_on)."""
        if not _field(step, "rollback_of"):
            return None
        refused = deploy_rules.overtaken(step, await self.current(step))
        return _refused(step, refused) if refused is not None else None

    async def _check(self, step: Deploy, thread: Thread) -> str | Error:
        """The commit the step's tag points to, or the error that stops it (an agent asking
        for an environment its entry does not list, too)."""
        asker = thread.authority(thread.instruction_for(step.id))
        invalid = self.policy.invalid_deploy(step) or \
            authority.why_not(self.policy, asker, authority.Ask(step.environment))
        if invalid:
            return Error(kind="validation", step_id=step.id, message=invalid)
        return await self.commit_for(step)

    async def commit_for(self, step: Deploy) -> str | Error:
        """The commit the step's tag points to now, or the error that says why there is none:
        an unknown service, no such tag (with the newest ones), the tags unreadable."""
        versions: Versions | None = self.deployers.get(step.service)
        if versions is None:  # in the policy's catalog, but not built (a thread older than it)
            unknown = wording.unknown_service(step.service, self.deployers)
            return Error(kind="validation", step_id=step.id, message=unknown)
        try:
            commit = await versions.resolve(step.tag)
            if commit:
                return commit
            newest = [t.name for t in (await versions.list_tags())[:5]]
        except DeployerError as e:
            return Error(kind="deployer", step_id=step.id, message=wording.tag_lookup_failed(step.tag, e))
        return Error(kind="validation", step_id=step.id, message=wording.no_such_tag(step.tag, newest))
