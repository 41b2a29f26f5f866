"""Slack out: what happens in a thread, posted into its Slack threads (approvals as Block Kit
messages updated in place, reminders under them, escalations by direct message)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.channels.slack import blocks, names
from bot.adapters.channels.slack.kind import KIND
from bot.adapters.channels.slack.web import EVENT_TTL
from bot.core import standing, wording
from bot.core.events import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    CheckObserved,
    Event,
    HumanResponse,
    UserMessage,
    VerificationEnded,
    VerificationStarted,
)
from bot.core.people import Directory
from bot.core.policy import Policy
from bot.core.thread import Thread
from bot.core.triggers import targets
from bot.runtime.ports import Inbox

log = logging.getLogger(__name__)


class SlackNotifier:
    """Posts what happens in Slack-born threads back into their Slack thread, and what
    happens in any thread with Slack notify targets (a trigger's, a schedule's) into a Slack
    thread of its own in each of those channels. An approval's message is updated in place
    as it goes (each approval of several, the decision, its expiry); its reminders are
    posted under it; whoever it is escalated to gets it by direct message, buttons and all.

    `policy`: who may decide (named in reminders) and the Slack ids of the people it is
    escalated to. Without it reminders name "the approvers" and nobody gets a DM."""

    def __init__(self, web: AsyncWebClient, inbox: Inbox, policy: Policy | None = None) -> None:
        self.web, self.inbox, self.policy = web, inbox, policy

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        channel, thread_ts = thread.origin.at(KIND, "channel"), thread.origin.at(KIND, "thread_ts")
        if thread.origin.channel == KIND and channel and thread_ts:
            await self._post_all(thread, new, channel, thread_ts, names.slack_approval_message)
        for target in targets(thread.origin.notify, KIND):
            if target == channel and thread.origin.channel == KIND:
                continue  # already answered there
            try:
                root = await self._notify_root(thread, new, target)
            except SlackApiError as e:
                log.error("thread %s: Slack refused to start a thread in %s: %s",
                          thread.id, target, e.response.get("error", e))
                continue
            await self._post_all(thread, new, target, root, functools.partial(_notify_approval, channel=target))
        for event in new:  # direct messages: once, whichever Slack threads the thread is in
            try:
                await self._direct(thread, event)
            except SlackApiError as e:
                log.error("thread %s: Slack refused a direct message for %s: %s",
                          thread.id, event.type, e.response.get("error", e))

    async def _notify_root(self, thread: Thread, new: Sequence[Event], channel: str) -> str:
        """The ts of the message `thread` is posted under in `channel`: posted with the
        thread's first event, and bound to the thread so replies there continue it."""
        name = names.slack_notify_root(thread.id, channel)
        ts = await self.inbox.lookup(name)
        if ts:
            return ts
        first = next((e for e in thread.events if isinstance(e, UserMessage)), None)
        text = blocks.escape(wording.started_by(first.channel, first.user, first.text)) if first else thread.id
        posted = await self.web.chat_postMessage(channel=channel, text=blocks.cut(text, blocks.MESSAGE_TEXT))
        ts = await self.inbox.link(name, posted["ts"], thread.id)
        # Replies in that Slack thread are the thread's, as under a mention.
        await self.inbox.receive(names.slack_conversation(channel, ts), "root", EVENT_TTL, thread.id)
        return ts

    async def _post_all(
        self, thread: Thread, new: Sequence[Event], channel: str, thread_ts: str, approval_key: Callable[[str], str]
    ) -> None:
        for event in new:
            try:
                await self._post(thread, event, channel, thread_ts, approval_key)
            except SlackApiError as e:
                log.error(
                    "thread %s: Slack refused %s for %s: %s",
                    thread.id, event.type, channel, e.response.get("error", e),
                )

    async def _post(
        self, thread: Thread, event: Event, channel: str, thread_ts: str, key: Callable[[str], str]
    ) -> None:
        """`key`: approval id -> the Inbox name its approval message in this Slack thread is
        kept under (to update it in place as it goes)."""
        if isinstance(event, ApprovalRequested):
            posted = await self.web.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=blocks.fallback_text(event, thread.id),
                blocks=blocks.approval_request(thread.id, event),
            )
            await self.inbox.link(key(event.approval_id), posted["ts"], thread.id)
        elif isinstance(event, HumanResponse) and event.approval_id and event.approve is not None:
            await self._show_approval(thread, event.approval_id, channel, key)
        elif isinstance(event, ApprovalExpired):
            await self._show_approval(thread, event.approval_id, channel, key)
            if text := blocks.progress_text(thread, event):  # the requester's word: nothing was deployed
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif isinstance(event, ApprovalReminded):
            request = thread.pending_approval()
            if request is not None and request.approval_id == event.approval_id:
                deciders = (
                    blocks.mentions(self._deciders(thread, request), self.policy.directory) if self.policy
                    else blocks.escape(wording.the_approvers())
                )
                text = blocks.reminder_text(request, deciders, thread.id)
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif isinstance(event, ApprovalEscalated):
            request = thread.approval(event.approval_id)
            if request is not None:
                text = blocks.escalated_text(request, event.to, self._directory(), thread.id)
                await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        elif isinstance(event, VerificationStarted | CheckObserved | VerificationEnded):
            await self._show_verification(thread, event, channel, thread_ts, key)
        elif text := blocks.progress_text(thread, event):
            await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)

    async def _show_verification(
        self, thread: Thread, event: VerificationStarted | CheckObserved | VerificationEnded, channel: str,
        thread_ts: str, key: Callable[[str], str],
    ) -> None:
        """A verification is one message, posted when it starts and updated in place with each
        round's values; its end is also said anew (a failure must reach people, and an edit
        notifies nobody)."""
        name = key(f"verify:{event.deploy_id}")  # beside the approval messages of this Slack thread
        text = blocks.verification_text(thread, event.deploy_id)
        if text is None:
            return
        if isinstance(event, VerificationStarted):
            posted = await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
            await self.inbox.link(name, posted["ts"], thread.id)
            return
        ts = await self.inbox.lookup(name)
        if ts:
            await self.web.chat_update(channel=channel, ts=ts, text=text)
        if isinstance(event, VerificationEnded) and (said := blocks.progress_text(thread, event)):
            await self.web.chat_postMessage(channel=channel, thread_ts=thread_ts, text=said)

    async def _show_approval(self, thread: Thread, approval_id: str, channel: str, key: Callable[[str], str]) -> None:
        """Update the approval's message in this Slack thread, if it was posted, to show where it stands."""
        ts = await self.inbox.lookup(key(approval_id))
        found = standing.find(thread, approval_id)
        if ts and found is not None:
            await self.web.chat_update(channel=channel, ts=ts, **_approval_blocks(found, thread.id))

    # --- direct messages to whoever an approval is escalated to ----------------------------

    async def _direct(self, thread: Thread, event: Event) -> None:
        """An escalation asks each of its people by DM (posted to their Slack user id: the
        app's own conversation with them, which chat:write allows); once it is decided or
        lapsed, or someone approves one of several, those messages are updated like the one
        in the thread."""
        if isinstance(event, ApprovalEscalated):
            found = standing.find(thread, event.approval_id)
            if found is None or found.closed:
                return
            request = found.request
            for user in self._slack_ids(event.to):
                name = names.slack_dm_approval(request.approval_id, user)
                if await self.inbox.lookup(name):
                    continue  # asked already (the event was published again)
                posted = await self.web.chat_postMessage(
                    channel=user, text=blocks.fallback_text(request, thread.id),
                    blocks=blocks.approval_request(thread.id, request, found.given, blocks.escalated_note(request)),
                )
                await self.inbox.link(name, f"{posted['channel']} {posted['ts']}")
        elif isinstance(event, HumanResponse | ApprovalExpired) and event.approval_id:
            if isinstance(event, HumanResponse) and event.approve is None:
                return
            found = standing.find(thread, event.approval_id)
            if found is None or found.escalation is None:
                return
            shown = _approval_blocks(found, thread.id, blocks.escalated_note(found.request))
            for user in self._slack_ids(found.escalated_to):
                where = await self.inbox.lookup(names.slack_dm_approval(event.approval_id, user))
                if where and shown:
                    channel, _, ts = where.partition(" ")
                    await self.web.chat_update(channel=channel, ts=ts, **shown)

    def _directory(self) -> Directory:
        return self.policy.directory if self.policy is not None else Directory()

    def _slack_ids(self, principals: Sequence[str]) -> list[str]:
        """The Slack user ids of people (principals): a person's own ids, or a `slack:<id>`."""
        found: list[str] = []
        for principal in principals:
            person = self._directory().people.get(principal)
            if person is not None:
                found += person.ids.get(KIND, ())
            elif principal.startswith(f"{KIND}:"):
                found.append(principal.removeprefix(f"{KIND}:"))
        return list(dict.fromkeys(found))

    def _deciders(self, thread: Thread, request: ApprovalRequested) -> list[str]:
        assert self.policy is not None
        return list(standing.of(thread, request, self.policy).deciders or ())


def _approval_blocks(found: standing.Standing, thread_id: str, note: str = "") -> dict[str, Any]:
    """What an approval message shows now (`text` and `blocks` for chat.update): decided,
    lapsed, or still open with the approvals it got so far (buttons kept; `note` on top)."""
    # Shown against the rules in force (they may ask more than when it was asked).
    request = found.request.model_copy(update={"required": found.required})
    if found.decision is not None:
        shown = blocks.decided(request, found.decision, thread_id, found.given)
    elif found.expiry is not None:
        shown = blocks.expired(request, found.expiry.expires_at, thread_id)
    else:
        shown = blocks.approval_request(thread_id, request, found.given, note)
    return {"text": blocks.fallback_text(request, thread_id), "blocks": shown}


def _notify_approval(approval_id: str, channel: str) -> str:
    return names.slack_notify_approval_message(approval_id, channel)

