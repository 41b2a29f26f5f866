"""Every Redis key deploybot uses is built here, and every name that ends up in one.

Per-thread keys share the hash tag `{id}` so a thread's keys live in one slot on Redis
Cluster, which lets one script touch them atomically. The same holds for a conversation's keys
(`{scope}`) and the personal tokens (`{api-tokens}`). Keys without a tag (the work stream, the
recency index, an environment's lock and history) are each used alone, or beside a thread's
script in a pipeline that is not a transaction; no script or transaction spans two of them.
The status index (`{threads}`) is its own slot: one script moves a thread between its
sorted sets, beside (never inside) the thread's own script.

The module-level functions name a channel's conversations (scopes for Inbox.receive) and
pointers (names for Inbox.link/lookup); the Inbox puts them inside its own keys. Channels
import them from here so every stored name is spelled in one place. Changing any string
here orphans data already stored under the old one.
"""

from __future__ import annotations

# --- names channels pass to the Inbox -------------------------------------------------------

EMAIL_INBOUND = "email:inbound"
"""The scope every inbound email is deduplicated in (by Message-ID)."""

EMAIL_UNCONFIRMED = "email:unconfirmed"
"""The scope an unproven email request is marked in by the address asked to confirm it, until
it is confirmed or expires: one waits per address."""

EMAIL_CONFIRMATIONS_MAILED = "email:confirmations-mailed"
"""The scope each "Did you send this?" is marked in by the address it goes to, for a while:
one per address in that time."""


def slack_conversation(channel: str, thread_ts: str) -> str:
    """A Slack thread: the scope its messages are deduplicated in and bound to a bot thread."""
    return f"slack:{channel}:{thread_ts}"


def slack_approval_message(approval_id: str) -> str:
    """An approval -> the ts of the Slack message asking for it (updated once decided)."""
    return f"slack:approval-message:{approval_id}"


def slack_notify_root(thread_id: str, channel: str) -> str:
    """A thread posted to a Slack channel it did not come from (a notify target) -> the ts
    of the message its updates are posted under."""
    return f"slack:notify-root:{thread_id}:{channel}"


def slack_notify_approval_message(approval_id: str, channel: str) -> str:
    """An approval asked for in a notify target's Slack thread -> the ts of that message."""
    return f"slack:notify-approval:{approval_id}:{channel}"


def slack_command(trigger_id: str) -> str:
    """The scope a `/deploy` command is deduplicated in (a Socket Mode envelope can come twice)."""
    return f"slack:command:{trigger_id}"


def email_notify_root(thread_id: str, address: str) -> str:
    """A thread mailed to a notify target -> the Message-ID its later mails thread under."""
    return f"email:notify-root:{thread_id}:{address}"


def github_deployment(deploy: str) -> str:
    """A deploy step (`<thread id>-<step id>`, its deploy id) -> the id of the GitHub
    deployment that shows it on GitHub's Environments page."""
    return f"github:deployment:{deploy}"


GITHUB_DELIVERIES = "github:deliveries"
"""The scope every GitHub webhook delivery is deduplicated in (by X-GitHub-Delivery)."""

GITHUB_BODIES = "github:bodies"
"""The scope every GitHub webhook delivery is also deduplicated in by the SHA-256 of its body:
the signature covers only the body, so a captured delivery replayed under a new
X-GitHub-Delivery is still the same delivery."""


def github_gate(thread_id: str) -> str:
    """A thread a `deployment_protection_rule` delivery started -> what GitHub asked (JSON:
    the callback, the installation, the run): the thread is a gated deployment."""
    return f"github:gate:{thread_id}"


def github_gate_answer(thread_id: str) -> str:
    """A gated deployment -> the one answer it gets ("approved" or "rejected"), bound before
    it is sent: whichever decision binds first is the only one ever sent."""
    return f"github:gate:answer:{thread_id}"


def github_gate_sent(thread_id: str) -> str:
    """A gated deployment -> set once GitHub took its answer: a resumed run never sends twice."""
    return f"github:gate:sent:{thread_id}"


def github_gate_commit(service: str, commit: str) -> str:
    """A service's commit a gated deployment asks for -> its thread: the only commits the
    gate lets a deploy's tag be (they resolve to themselves)."""
    return f"github:gate:commit:{service}:{commit}"


def slack_dm_approval(approval_id: str, user: str) -> str:
    """An approval escalated to a Slack user -> "<channel> <ts>" of the DM asking them."""
    return f"slack:dm-approval:{approval_id}:{user}"


def email_message(message_id: str) -> str:
    """An email (inbound or sent) -> its bot thread, so replies find their thread."""
    return f"email:msg:{message_id}"


def email_sent(message_id: str) -> str:
    """A mail the bot sent that can be replied to, by its Message-ID -> what it said (its text,
    subject and sender, email_reply.Sent), so a reply's new text is found by it. Expires."""
    return f"email:sent:{message_id}"


def email_approval(approval_id: str) -> str:
    """An approval asked for by email -> its bot thread."""
    return f"email:approval:{approval_id}"


def email_confirmation(confirmation_id: str) -> str:
    """A sender confirmation asked for by email ("Did you send this?") -> its bot thread."""
    return f"email:confirmation:{confirmation_id}"


# --- Redis keys ------------------------------------------------------------------------------


class Keys:
    def __init__(self, prefix: str = "deploybot") -> None:
        self.prefix = prefix

    def events(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{{{thread_id}}}:events"

    def meta(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{{{thread_id}}}:meta"

    def lease(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{{{thread_id}}}:lease"

    def packed(self, thread_id: str) -> str:
        """A compacted thread: its created time, origin and events in one zlib blob
        (bot/adapters/redis/packing.py), instead of `meta` and `events`."""
        return f"{self.prefix}:thread:{{{thread_id}}}:packed"

    def names(self, thread_id: str) -> str:
        """What the Inbox bound to this thread: a hash, Inbox key -> the value it was bound
        to (a conversation, an email's Message-ID, an approval's message), so they go
        with the thread (bot/runtime/gc.py)."""
        return f"{self.prefix}:thread:{{{thread_id}}}:names"

    def thread_keys(self, thread_id: str) -> list[str]:
        """A thread's own keys (one slot), in the order the removing and compacting scripts
        take them: events, meta, lease, packed."""
        return [self.events(thread_id), self.meta(thread_id), self.lease(thread_id), self.packed(thread_id)]

    def work(self) -> str:
        """The handoff stream: one entry per "run this thread", read by a consumer group. One
        stream, so on a cluster one slot: every handoff goes through that shard's master."""
        return f"{self.prefix}:work"

    def turn(self, chore: str) -> str:
        """Whose turn a periodic chore is (see WorkQueue.turn); next to the work stream."""
        return f"{self.work()}:turn:{chore}"

    def recent(self) -> str:
        return f"{self.prefix}:threads:recent"

    # --- the status index: one slot ({threads}), so one script keeps it consistent ---------

    def indexed(self) -> str:
        """A hash, thread id -> "<version> <status>": what the index last heard of each thread.
        An update carrying an older version than this is ignored."""
        return f"{self.prefix}:{{threads}}:indexed"

    def by_status(self, status: str) -> str:
        """The threads in `status`, by when they entered it (seconds since the epoch)."""
        return f"{self.prefix}:{{threads}}:status:{status}"

    def to_compact(self) -> str:
        """Finished threads not compacted yet, by when they finished."""
        return f"{self.prefix}:{{threads}}:to-compact"

    def lock(self, environment: str, service: str = "") -> str:
        """The lock on an environment, or on one service there (names hold no ':')."""
        return f"{self.prefix}:lock:{environment}" + (f":{service}" if service else "")

    def history(self, environment: str) -> str:
        return f"{self.prefix}:deploys:{environment}"

    def timers(self) -> str:
        """When each thread is next due (reminders, expiry, a deploy waiting in line)."""
        return f"{self.prefix}:timers"

    def queue(self, environment: str, service: str) -> str:
        """The deploys of `service` waiting for their turn in `environment`."""
        return f"{self.prefix}:queue:{environment}:{service}"

    def faulty(self, environment: str) -> str:
        """The ids of the deploys to `environment` that were rolled back."""
        return f"{self.prefix}:deploys:{environment}:faulty"

    def deploy_counters(self) -> str:
        """The deploy and approval-wait counters and histograms GET /metrics shows (a hash:
        one field per series and bucket), shared by every process."""
        return f"{self.prefix}:metrics:deploys"
    def verified(self, environment: str) -> str:
        """deploy id -> when its verification passed, for the deploys to `environment`."""
        return f"{self.prefix}:deploys:{environment}:verified"

    def verdicts(self, environment: str) -> str:
        """deploy id -> who verified it early, or skipped its verification and why (JSON), for
        the deploys to `environment`. Apart from `verified`, whose plain times older
        processes read."""
        return f"{self.prefix}:deploys:{environment}:verdicts"

    def conversation(self, scope: str) -> str:
        """A channel's conversation (a Slack thread, an email chain) -> its bot thread."""
        return f"{self.prefix}:conversation:{{{scope}}}"

    def delivery(self, scope: str, message_id: str) -> str:
        """Marks one inbound message as seen; shares its conversation's hash tag."""
        return f"{self.prefix}:conversation:{{{scope}}}:seen:{message_id}"

    def ref(self, name: str) -> str:
        """A channel's pointer: a Slack thread to its bot thread, an approval to its message."""
        return f"{self.prefix}:ref:{name}"

    def freezes(self) -> str:
        """The stop-the-line freezes: a hash, scope (an environment, or '*') -> the freeze as JSON."""
        return f"{self.prefix}:freezes"

    def schedule(self, schedule_id: str) -> str:
        """A schedule's last occurrence that started a thread (Unix seconds); created when the
        schedule is first seen, so it counts from then."""
        return f"{self.prefix}:schedule:{schedule_id}:last"

    # --- people: personal API tokens, sign-in links, ended sessions (bot/adapters/redis/credentials.py)

    def api_token(self, token_id: str) -> str:
        """One personal API token: a hash of it, whose it is, its name and times. Shares the
        index's hash tag, so one transaction creates or revokes both."""
        return f"{self.prefix}:{{api-tokens}}:{token_id}"

    def api_tokens(self) -> str:
        """The set of every personal API token's id, for listing them."""
        return f"{self.prefix}:{{api-tokens}}"

    def api_token_key(self) -> str:
        """The random key personal API tokens' checksums are made with (bot/adapters/redis/credentials.py)."""
        return f"{self.prefix}:api-token-key"

    def sign_in_link(self, code_hash: str) -> str:
        """A one-time sign-in link, by the hash of its code -> the person; expires."""
        return f"{self.prefix}:sign-in:{code_hash}"

    def ended_session(self, session_id: str) -> str:
        """A signed-out session, kept until its cookie would have expired anyway."""
        return f"{self.prefix}:session-ended:{session_id}"
