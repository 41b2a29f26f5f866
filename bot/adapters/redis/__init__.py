"""The stored state, in Redis: `threads` (each thread's events) and `packing`, `work` (the
handoff between processes), `inbox` (delivery dedupe and channel pointers), `timers`,
`environments` (locks), `freezes`, `schedules`, `credentials`, `deploy_counters`, `cursors`,
`live_output` (a running deploy's lines), `outbox` (messages that must go out); `thread_scripts` the threads' Lua;
`keys` builds every key; `eviction` refuses a Redis that may evict; `connect` makes the client
(`embedded`: the no-secrets server),
`replicas`, `replies` and `scripts` are how it is talked to. Each implements a port of
bot/runtime/ports/ (contracts: tests/runtime/ports)."""

__all__ = [
    "connect", "credentials", "cursors", "deploy_counters", "embedded", "environments", "eviction", "freezes",
    "inbox", "keys", "live_output", "outbox", "packing", "replicas", "replies", "schedules", "scripts",
    "thread_scripts", "threads", "timers", "work"
]
