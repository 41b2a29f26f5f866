"""The approval buttons: Approve decides at once; Reject opens a form asking what should
change, and its submission decides. Whoever clicks is told privately when they may not."""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.channels.slack import blocks
from bot.adapters.channels.slack.inbound import Inbound
from bot.runtime.service import Forbidden, Refused

log = logging.getLogger(__name__)
COULD_NOT_OPEN_FORM = "Slack did not open the rejection form; click Reject again."
STALE_FORM = "This form is out of date or incomplete: click Reject on the approval message again."
NOT_OUR_BUTTON = "That button is not one deploybot can act on; use the buttons of its latest approval message."

Click = tuple[str, str, str, tuple[str, str]]  # thread_id, approval_id, user, (channel, thread_ts)


def user_of(body: dict) -> str | None:
    user = body.get("user")
    user_id = user.get("id") if isinstance(user, dict) else None
    return user_id if isinstance(user_id, str) and user_id else None


def where_of(body: dict) -> tuple[str, str] | None:
    """(channel, thread_ts) of the message a button sits on; None when the payload lacks it."""
    channel = body.get("channel")
    channel_id = channel.get("id") if isinstance(channel, dict) else None
    if not isinstance(channel_id, str) or not channel_id:
        return None
    message, container = body.get("message"), body.get("container")
    thread_ts = (message.get("thread_ts") if isinstance(message, dict) else None) or (
        container.get("message_ts") if isinstance(container, dict) else None
    )
    return channel_id, thread_ts if isinstance(thread_ts, str) else ""


def refusal(e: Refused) -> str:
    return f"You can't decide on this deploy: {e.message}" if isinstance(e, Forbidden) else e.message


async def click(inbound: Inbound, body: dict, action: object) -> Click | None:
    """(thread_id, approval_id, user, where) of a click on an approval button; None (told
    or logged) when the payload is not one."""
    user, where = user_of(body), where_of(body)
    try:
        value = action.get("value") if isinstance(action, dict) else None
        thread_id, approval_id = blocks.parse_button_value(value)
    except ValueError as e:
        log.warning("slack: ignored a click on a button deploybot did not make: %s", e)
        if user and where:
            await inbound.tell(where, user, NOT_OUR_BUTTON)
        return None
    if not user or not where:
        log.warning("slack: ignored a click on thread %s without a user or channel", thread_id)
        return None
    return thread_id, approval_id, user, where


async def decide(inbound: Inbound, body: dict, action: object, approve: bool) -> None:
    clicked = await click(inbound, body, action)
    if clicked is None:
        return
    thread_id, approval_id, user, where = clicked
    try:
        await inbound.service.respond(
            thread_id, "", inbound.who(user), approval_id, approve=approve, channel="slack"
        )
    except Refused as e:
        await inbound.tell(where, user, refusal(e))
        return
    await inbound.kick(thread_id)


async def reject(inbound: Inbound, body: dict, action: dict, client: AsyncWebClient) -> None:
    """Reject: the form asking what should change, for someone who may decide."""
    clicked = await click(inbound, body, action)
    if clicked is None:
        return
    thread_id, approval_id, user, where = clicked
    try:
        await inbound.service.check_decision(thread_id, approval_id, inbound.who(user))
    except Refused as e:
        await inbound.tell(where, user, refusal(e))
        return
    trigger_id = body.get("trigger_id")
    try:
        if not isinstance(trigger_id, str) or not trigger_id:
            raise ValueError("no trigger_id")
        await client.views_open(trigger_id=trigger_id, view=blocks.reject_modal(thread_id, approval_id, *where))
    except (ValueError, SlackApiError) as e:
        why = e.response.get("error", e) if isinstance(e, SlackApiError) else e
        log.warning("slack: could not open the reject form for thread %s: %s", thread_id, why)
        await inbound.tell(where, user, COULD_NOT_OPEN_FORM)


async def feedback(inbound: Inbound, ack: Callable, body: dict, view: dict) -> None:
    """The Reject form submitted: a rejection with its feedback; an unusable form is
    refused in the form itself."""
    try:
        thread_id, approval_id, channel, thread_ts = blocks.parse_modal_metadata(
            view.get("private_metadata") if isinstance(view, dict) else None
        )
    except ValueError as e:
        log.warning("slack: refused a reject form with unreadable metadata: %s", e)
        await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: STALE_FORM})
        return
    said, user = blocks.feedback_value(view), user_of(body)
    if said is None or user is None:
        log.warning("slack: refused a reject form for thread %s without %s", thread_id,
                    "its feedback field" if said is None else "a user")
        await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: STALE_FORM})
        return
    said = said.strip()
    if not said:
        await ack(response_action="errors", errors={blocks.FEEDBACK_BLOCK: "Say what should change."})
        return
    await ack()
    try:
        await inbound.service.respond(thread_id, said, inbound.who(user), approval_id, approve=False, channel="slack")
    except Refused as e:
        await inbound.tell((channel, thread_ts), user, refusal(e))
        return
    await inbound.kick(thread_id)
