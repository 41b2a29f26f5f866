"""deploybot: a chat-ops deploy bot. A thread of typed events is the whole state; `core` decides
(pure), `runtime` sequences it over ports, `adapters` are the edges, `config` reads the settings,
`wiring` builds every part from them, `testing` holds the real stand-ins tests run against, and
`python -m bot` (`__main__`) is the command line. docs/architecture.md tells the whole story."""

__all__ = ["adapters", "config", "core", "runtime", "testing", "wiring"]
