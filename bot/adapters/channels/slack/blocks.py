"""Block Kit for deploybot's Slack messages. Pure: events in, JSON-able dicts out.

Two rules hold for every text object built here:

- Foreign text (what people, the model, git tags, lock and cancel reasons say) goes through
  `escape` where it is placed into Slack text, so it shows as typed: `<!channel>`, `<@U…>` or
  `<http://x|y>` in it ping and link nobody, `*bold*`, `_italic_`, `~strike~`, `` `code` ``
  and a line's `>` format nothing, and its format characters (U+202E, zero-width ones:
  bot.core.characters) are gone. Only the bot's own markup (the mentions it means to make,
  `<!date^…>`, the run link) stays live; a URL, a code block and a plain_text object take
  `entities` (nothing formats there).
- Every text object is cut to Slack's limit for it with `cut`, after escaping, with a visible
  marker; the full text is in the thread's events.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.adapters.channels.slack.kind import KIND
from bot.core import people, verification, wording
from bot.core.characters import visible
from bot.core.events import ApprovalRequested, Event, HumanResponse, VerificationStarted
from bot.core.notices import notice
from bot.core.people import ANYONE, Directory
from bot.core.thread import Thread

APPROVE = "deploybot_approve"
REJECT = "deploybot_reject"
REJECT_VIEW = "deploybot_reject_feedback"
FEEDBACK_BLOCK = "feedback"

# Slack's limits, in characters (Block Kit reference; chat.postMessage truncates `text`).
SECTION_TEXT = 3000  # a section's text, and each mrkdwn / plain_text element of a context
BUTTON_TEXT = 75
HEADER_TEXT = 150
MESSAGE_TEXT = 40_000  # a message's top-level `text` (also ephemeral messages)
MODAL_TITLE = 24  # a modal's title, submit and close labels
PRIVATE_METADATA = 3000
BUTTON_VALUE = 2000
IN_THE_THREAD = "in the thread"
FILES_IGNORED = "(attached files were ignored)"

_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_MARKERS = re.compile(r"[*_~`]+")  # a run of emphasis or code markers
_QUOTE = re.compile(r"^(\s*)(?=&gt;)", re.M)  # a line whose first character is ">" is a quote
# Slack has no escape for a marker. It shows the fallback text of a date it cannot read (this
# one's format is no format) as it is, never formatted: the marker, kept as typed.
_VERBATIM = "<!date^00000000^{{_}}|{}>"
# Invisible, and no quote starts after it; added after the format characters typed are dropped.
_SOFT_HYPHEN = "\u00ad"
_FENCE = re.compile(r"`{3,}")


def escape(text: str) -> str:
    """Foreign text for Slack's mrkdwn, shown as typed: `entities`, then each marker that
    could start or end emphasis or code kept verbatim, and no line a quote. Apply exactly
    once, where the text is placed into Slack text."""
    return _QUOTE.sub(r"\1" + _SOFT_HYPHEN, _MARKERS.sub(_verbatim, entities(text)))


def entities(text: str) -> str:
    """Foreign text made inert where nothing formats (a plain_text object, a URL, a code
    block) or for the bot's own words that mean their markup: no format characters, and &,
    < and > as entities (the only three Slack reads as markup: no ping, no link)."""
    text = visible(text)
    for char, entity in _ENTITIES:
        text = text.replace(char, entity)
    return text


def _verbatim(run: re.Match[str]) -> str:
    # Inside a word (snake_case, 2*3, :white_check_mark:) Slack formats nothing: left as it is,
    # so names copy as typed. A backtick opens code even there.
    text, start, end = run.string, run.start(), run.end()
    in_a_word = 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return run[0] if in_a_word and "`" not in run[0] else _VERBATIM.format(run[0])


def code_block(text: str) -> str:
    """Foreign text (a deploy's output) as a code block it cannot close: a run of three
    backticks in it is split by zero-width spaces."""
    inside = _FENCE.sub(lambda run: "\u200b".join(run[0]), entities(text))
    return f"```{inside}```"


def unescape(text: str) -> str:
    """Text as Slack delivers it (&, < and > that people typed arrive escaped) made plain,
    so what is stored is what was typed and `escape` on the way out is not doubled."""
    for char, entity in reversed(_ENTITIES):
        text = text.replace(entity, char)
    return text


def truncation_marker(where: str = IN_THE_THREAD) -> str:
    return f"… (truncated; full text: {where})"


def cut(text: str, limit: int, where: str = IN_THE_THREAD) -> str:
    """`text` (already escaped) cut to `limit` characters, marker included. Never splits an
    entity (`&amp;`) or markup (`<@U…>`, `<url|run>`, a marker kept verbatim): escaped foreign
    text has no other `&` or `<`, so the cut moves back before an unfinished one."""
    if len(text) <= limit:
        return text
    marker = truncation_marker(where)
    if len(marker) >= limit:  # a short field (a button): no room for the marker
        marker = "…"
    kept = text[: max(limit - len(marker), 0)]
    amp, lt = kept.rfind("&"), kept.rfind("<")
    if amp > kept.rfind(";"):
        kept = kept[:amp]
    if lt > kept.rfind(">"):
        kept = kept[:lt]
    return kept + marker


def mrkdwn(text: str, limit: int = SECTION_TEXT, where: str = IN_THE_THREAD) -> dict[str, Any]:
    """A mrkdwn text object; `text` is Slack markup (foreign parts already escaped).
    `verbatim`: Slack would otherwise turn a bare @here, @channel or URL in it into a mention
    or link; the bot's own mentions are written as <@U…> and still work."""
    return {"type": "mrkdwn", "text": cut(text, limit, where), "verbatim": True}


def plain_text(text: str, limit: int, where: str = IN_THE_THREAD) -> dict[str, Any]:
    """A plain_text text object. Slack reads &, < and > as markup here too, so `text` is
    escaped here (`entities`: nothing formats in plain_text): pass it raw."""
    return {"type": "plain_text", "text": cut(entities(text), limit, where)}


def in_thread(thread_id: str) -> str:
    """Where the full text of something cut short can be read."""
    return f"deploybot thread {thread_id}"


def button_value(thread_id: str, approval_id: str) -> str:
    return f"{thread_id}:{approval_id}"


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _is_id(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 100 and set(value) <= _ID_CHARS


def parse_button_value(value: object) -> tuple[str, str]:
    """(thread_id, approval_id); ValueError for anything deploybot did not put there."""
    if not isinstance(value, str):
        raise ValueError(f"not a deploybot button value: {value!r}")
    thread_id, _, approval_id = value.partition(":")
    if not _is_id(thread_id) or not _is_id(approval_id):
        raise ValueError(f"not a deploybot button value: {value[:200]!r}")
    return thread_id, approval_id


def _when(at: datetime) -> str:
    # Slack shows <!date^…> in each reader's time zone; the text after | is the fallback.
    return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{at:%Y-%m-%d %H:%M} UTC>"


def _who(user: str) -> str:
    """A person the bot names on purpose: a real mention for a Slack user id (as a decision
    records it, or as `slack:<id>`, the principal of someone deploybot.toml does not name),
    else their name or address (foreign text: escaped)."""
    via, _, raw = user.partition(":")
    if raw and via in ("slack", "email"):
        user = raw
    return f"<@{user}>" if user[:1] in ("U", "W") and user.isalnum() else escape(user)


def _code(value: str) -> str:
    """A name shown as inline code, where nothing formats; one holding a backtick, which
    would end the code, as text."""
    return escape(value) if "`" in value else f"`{entities(value)}`"


def _summary(r: ApprovalRequested, where: str) -> dict[str, Any]:
    service, tag, env = escape(r.service), _code(r.tag), escape(r.environment)
    lines = [
        f"*Deploy {service} {tag} to {env}?*",
        f"*Service:* {service}   *Tag:* {tag}   *Commit:* {_code(r.commit[:7])}",
        f"*Environment:* {env}",
        f"*Asked by:* {_who(r.asker) if r.asker else 'unknown'}",
        f"*Expires:* {_when(r.expires_at)}",
    ]
    if r.reason:  # last: the model's words are what a cut may shorten
        lines.append(f"*Why:* {escape(r.reason)}")
    return {"type": "section", "text": mrkdwn("\n".join(lines), SECTION_TEXT, where)}


def _change(r: ApprovalRequested, where: str) -> list[dict[str, Any]]:
    """What the deploy changes, in a block of its own (its commit subjects are other
    people's text: escaped, and a cut shortens them, never the summary)."""
    if r.change is None:
        return []
    head, *rest = wording.change_lines(r.change)
    lines = [f"*Changes:* {escape(head)}", *(f"• {escape(line)}" for line in rest)]
    return [{"type": "section", "text": mrkdwn("\n".join(lines), SECTION_TEXT, where)}]


def _button(action_id: str, style: str, label: str, value: str) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id, "style": style, "value": value[:BUTTON_VALUE],
            "text": plain_text(label, BUTTON_TEXT)}


def approval_request(
    thread_id: str, r: ApprovalRequested, approvals: Sequence[HumanResponse] = (), note: str = ""
) -> list[dict[str, Any]]:
    """The approval message, with its buttons. `approvals`: those given so far (a request
    that needs several shows how far it got); `note`: mrkdwn above it (foreign parts
    escaped), e.g. why someone it was escalated to is asked."""
    where = in_thread(thread_id)
    value = button_value(thread_id, r.approval_id)
    top = [{"type": "section", "text": mrkdwn(note, SECTION_TEXT, where)}] if note else []
    return [
        *top,
        _summary(r, where),
        *_change(r, where),
        *_progress(r, approvals, where),
        {
            "type": "actions",
            "block_id": f"approval:{r.approval_id}",
            "elements": [
                _button(APPROVE, "primary", "Approve", value),
                _button(REJECT, "danger", "Reject", value),
            ],
        },
    ]


def _decider(decision: HumanResponse) -> str:
    # A click in Slack names its Slack user (a mention); a decision by another channel names
    # its person, else the address or name it came with.
    return _who(decision.user if decision.via == "slack" else decision.person or decision.user)


def _progress(r: ApprovalRequested, approvals: Sequence[HumanResponse], where: str) -> list[dict[str, Any]]:
    """How far a request that needs several approvals got ("1 of 2: approved by <@U1>")."""
    if r.required <= 1:
        return []
    text = wording.approval_progress([_decider(a) for a in approvals], r.required)
    return [{"type": "context", "elements": [mrkdwn(f":ballot_box_with_check: {text}", SECTION_TEXT, where)]}]


def decided(
    r: ApprovalRequested, decision: HumanResponse, thread_id: str = "", approvals: Sequence[HumanResponse] = ()
) -> list[dict[str, Any]]:
    """The approval message once decided, without buttons. `approvals`: every approval it
    got (a request that needs several names them all)."""
    where = in_thread(thread_id) if thread_id else IN_THE_THREAD
    by = _decider(decision)
    if decision.approve:
        if len(approvals) > 1:
            by = ", ".join(_decider(a) for a in approvals)
        outcome = f":white_check_mark: Approved by {by} at {_when(decision.at)}"
    else:
        feedback = f": {escape(decision.text)}" if decision.text else ""
        outcome = f":x: Rejected by {by}{feedback}"
    return [_summary(r, where), {"type": "context", "elements": [mrkdwn(outcome, SECTION_TEXT, where)]}]


def expired(r: ApprovalRequested, expires_at: datetime, thread_id: str = "") -> list[dict[str, Any]]:
    """The approval message once nobody decided in time: "expired at T, not deployed", no
    buttons."""
    where = in_thread(thread_id) if thread_id else IN_THE_THREAD
    outcome = f"{EMOJI['waiting']} {escape(wording.expired_in_place(expires_at))}"
    return [_summary(r, where), {"type": "context", "elements": [mrkdwn(outcome, SECTION_TEXT, where)]}]


def fallback_text(r: ApprovalRequested, thread_id: str = "") -> str:
    """The message's top-level `text` (notifications, screen readers)."""
    text = (
        f"Approval needed: deploy {escape(r.service)} {escape(r.tag)} ({escape(r.commit[:7])}) "
        f"to {escape(r.environment)}"
    )
    if r.requested_by.startswith(f"{people.AGENT}:"):  # people see an agent's request as such, and whose it is
        text = "Approval needed: " + escape(wording.agent_asks_to_deploy(
            r.asker, r.service, f"{r.tag} ({r.commit[:7]})", r.environment))
    return cut(text, MESSAGE_TEXT, in_thread(thread_id) if thread_id else IN_THE_THREAD)


def reject_modal(thread_id: str, approval_id: str, channel: str, thread_ts: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": REJECT_VIEW,
        "private_metadata": f"{thread_id}:{approval_id}:{channel}:{thread_ts}"[:PRIVATE_METADATA],
        "title": plain_text("Reject deploy", MODAL_TITLE),
        "submit": plain_text("Reject", MODAL_TITLE),
        "close": plain_text("Cancel", MODAL_TITLE),
        "blocks": [
            {
                "type": "input",
                "block_id": FEEDBACK_BLOCK,
                "label": plain_text("What should change?", 2000),
                "element": {"type": "plain_text_input", "action_id": FEEDBACK_BLOCK, "multiline": True},
            }
        ],
    }


def parse_modal_metadata(metadata: object) -> tuple[str, str, str, str]:
    """(thread_id, approval_id, channel, thread_ts) from `reject_modal`'s private_metadata;
    ValueError for anything else."""
    if not isinstance(metadata, str):
        raise ValueError(f"not deploybot modal metadata: {metadata!r}")
    parts = metadata.split(":", 3)
    if len(parts) != 4 or not all(_is_id(p) for p in parts[:3]) or not (parts[3] == "" or _is_id(parts[3])):
        raise ValueError(f"not deploybot modal metadata: {metadata[:200]!r}")
    thread_id, approval_id, channel, thread_ts = parts
    return thread_id, approval_id, channel, thread_ts


def feedback_value(view: Any) -> str | None:
    """The text typed into the reject modal; None when the submitted view has no such field."""
    try:
        value = view["state"]["values"][FEEDBACK_BLOCK][FEEDBACK_BLOCK].get("value")
    except (KeyError, TypeError, AttributeError):
        return None
    if value is None:
        return ""  # an empty multiline input is sent without a value
    return value if isinstance(value, str) else None


EMOJI = {
    "started": ":rocket:", "deployed": ":white_check_mark:", "failed": ":x:", "message": "",
    "warning": ":warning:", "cancelled": ":no_entry:", "waiting": ":hourglass_flowing_sand:",
}


def progress_text(thread: Thread, event: Event) -> str | None:
    """What the bot says in the Slack thread when `event` is recorded; None: nothing."""
    n = notice(thread, event)
    if n is None:
        return None
    # The notice's words carry foreign text (model messages, tags, lock and cancel reasons):
    # escaped whole; "{who}" then becomes the one mention the bot means to make.
    said = dataclasses.replace(n, text=escape(n.text)).render(_who)
    text = f"{EMOJI[n.kind]} {said}".strip()
    if n.url:
        text += f" <{entities(n.url).replace('|', '%7C')}|run>"
    if n.detail:
        text += f"\n{code_block(n.detail[-1500:])}"
    return cut(text, MESSAGE_TEXT, in_thread(thread.id))


def verification_text(thread: Thread, deploy_id: str) -> str | None:
    """A deploy's verification as its Slack message shows it, updated in place each round:
    where the bake stands and each check's latest value. None: no such verification."""
    started = next((e for e in thread.of(VerificationStarted) if e.deploy_id == deploy_id), None)
    if started is None:
        return None
    what = wording.what_to_deploy(started.service, started.tag, started.environment)
    ended = verification.ended(thread, deploy_id)
    head = notice(thread, ended) if ended is not None else notice(thread, started)
    lines = [f"{EMOJI[head.kind]} {escape(head.text)}" if head else escape(what)]
    for name, seen in verification.latest(thread, started).items():
        line = wording.check_line(name, seen.ok, seen.value) if seen else f"{name}: not asked yet"
        lines.append(f"• {escape(line)}")
    return cut("\n".join(lines), MESSAGE_TEXT, in_thread(thread.id))


# --- approvals over time: who may decide, reminders, escalation ---------------------------


def principal_mention(principal: str, directory: Directory) -> str:
    """Someone who may decide, as Slack shows them: a mention for a person with a Slack id
    (or a `slack:<id>` principal), else their name or address (escaped); `*` is anyone."""
    if principal == ANYONE:
        return escape(people.describe([ANYONE]))
    person = directory.people.get(principal)
    if person is not None:
        ids = person.ids.get(KIND, ())
        return f"<@{ids[0]}>" if ids else escape(person.name)
    return _who(principal)


def mentions(principals: Sequence[str], directory: Directory) -> str:
    """mrkdwn: "<@U1>, <@U2> or carol"."""
    return wording.one_of([principal_mention(p, directory) for p in principals])


def _what(r: ApprovalRequested) -> str:
    return escape(wording.what_to_deploy(r.service, r.tag, r.environment))


def reminder_text(r: ApprovalRequested, deciders: str, thread_id: str) -> str:
    """The reminder posted in the approval's Slack thread; `deciders` is mrkdwn (`mentions`:
    it means to ping them)."""
    # The template's own words hold no markup; each foreign part is escaped (or a mention).
    text = f":bell: {wording.reminder(_what(r), deciders, r.expires_at)}"
    return cut(text, MESSAGE_TEXT, in_thread(thread_id))


def escalated_text(r: ApprovalRequested, to: Sequence[str], directory: Directory, thread_id: str) -> str:
    return cut(f":mega: {wording.escalated(_what(r), mentions(to, directory))}", MESSAGE_TEXT, in_thread(thread_id))


def escalated_note(r: ApprovalRequested) -> str:
    """The top of the approval message sent by DM to someone it was escalated to."""
    return f":mega: {wording.escalated_to_you(_what(r), r.expires_at)}"
