"""The real stand-ins tests, the chaos suite and benchmarks run against: servers over real HTTP
(`fake_slack`, `fake_socket_mode`, `fake_github`, `fake_llm`, `quick_llm`, `prometheus`; `http`
their shared plumbing), real processes and Redis topologies (`cluster`, `ha`, `chaos`), faults
on a TCP link (`fault_proxy`: latency, cut, blackhole), the fault suite (`faults`, one module per
family of faults), what the chaos run and the fault suite both drive (`scenario`: the approver,
the model's stand-in, the approval check), in-memory
ports for fast tests of the core (`memory`, one module per port) and
`seed_history` (a long deploy history, stored fast); `try_gate` (the GitHub gate, tried on this
machine)."""

__all__ = [
    "chaos", "cluster", "fake_github", "fake_llm", "fake_slack", "fake_socket_mode", "fault_proxy", "faults", "ha",
    "http", "memory", "prometheus", "quick_llm", "scenario", "seed_history", "try_gate"
]
