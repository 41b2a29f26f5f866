"""Every Redis key deploybot uses is built here, and every name that ends up in one.

Per-thread keys share the hash tag `{id}` so a thread's keys live in one slot on Redis
Cluster, which lets one script touch them atomically. The same holds for a conversation's keys
(`{scope}`) and the personal tokens (`{api-tokens}`). Keys without a tag (the work stream, the
recency index, an environment's lock and history) are each used alone, or beside a thread's
script in a pipeline that is not a transaction; no script or transaction spans two of them.
The status index (`{threads}`) is its own slot: one script moves a thread between its
sorted sets, beside (never inside) the thread's own script.

A channel's own names (its conversations: scopes for Inbox.receive; its pointers: names for
Inbox.link/lookup) are in its package (`names.py`); the Inbox puts them inside its own keys.
Changing any string here orphans data already stored under the old one.
"""

from __future__ import annotations


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

    def live_output(self, deploy_id: str) -> str:
        """A running deploy's newest output lines (a list, expiring)."""
        return f"{self.prefix}:output:{deploy_id}"

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

    def outbox(self) -> str:
        """The messages that must go out, until sent: a hash, key -> the message as JSON."""
        return f"{self.prefix}:{{outbox}}:messages"

    def outbox_due(self) -> str:
        """When each kept message is next tried (ms, the store's clock); one slot with `outbox`."""
        return f"{self.prefix}:{{outbox}}:due"

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
