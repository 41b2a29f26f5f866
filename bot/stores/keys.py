"""Every Redis key deploybot uses is built here.

Per-thread keys share the hash tag `{id}` so a thread's keys live in one slot on Redis
Cluster, which lets one script touch them atomically.
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

    def work(self) -> str:
        """The handoff stream: one entry per "run this thread", read by a consumer group."""
        return f"{self.prefix}:work"

    def recent(self) -> str:
        return f"{self.prefix}:threads:recent"

    def lock(self, environment: str) -> str:
        return f"{self.prefix}:lock:{environment}"

    def history(self, environment: str) -> str:
        return f"{self.prefix}:deploys:{environment}"

    def conversation(self, scope: str) -> str:
        """A channel's conversation (a Slack thread, an email chain) -> its bot thread."""
        return f"{self.prefix}:conversation:{{{scope}}}"

    def delivery(self, scope: str, message_id: str) -> str:
        """Marks one inbound message as seen; shares its conversation's hash tag."""
        return f"{self.prefix}:conversation:{{{scope}}}:seen:{message_id}"

    def ref(self, name: str) -> str:
        """A channel's pointer: a Slack thread to its bot thread, an approval to its message."""
        return f"{self.prefix}:ref:{name}"
