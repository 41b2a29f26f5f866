"""The runtime: the core sequenced over ports (`ports`: what the core needs from the outside,
implemented by the adapters). `service` (launch, answer, cancel, fork: what every channel
shares; `launch_once`: a launch with an idempotency key), `worker` and `loop` (running a
thread), `agent` (the next step: commands, then the model), `deploying` (the deploy path, its
parts in `deploy_checks`, `deploy_queue`, `deploy_run` and `deploy_parts`; `renewal` keeps a
lock), `steps`, `verifying`, `promoting`, `gathering` (carrying steps out), `scheduler`, `gc`
(retention), `delivery` (metrics over a window), `clock`, `skew` (this process's clock against
the store's) and `retry`."""

__all__ = [
    "agent", "clock", "delivery", "deploy_checks", "deploy_parts", "deploy_queue", "deploy_run", "deploying",
    "gathering", "gc", "launch_once", "loop", "ports", "promoting", "renewal", "retry", "scheduler", "service",
    "skew", "steps", "verifying", "worker",
]
