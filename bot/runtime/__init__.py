"""The runtime: the core sequenced over ports (`ports`: what the core needs from the outside,
implemented by the adapters). `service` (launch, answer, cancel, fork: what every channel
shares), `worker` and `loop` (running a thread), `agent` (the next step: commands, then the
model), `deploying`, `steps`, `verifying`, `promoting`, `gathering` (carrying steps out),
`scheduler`, `gc` (retention), `delivery` (metrics over a window), `clock` and `retry`."""

__all__ = [
    "agent", "clock", "delivery", "deploying", "gathering", "gc", "loop", "ports", "promoting", "retry",
    "scheduler", "service", "steps", "verifying", "worker",
]
