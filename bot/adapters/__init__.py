"""The edges: each implements ports of bot/runtime/ports.py, and none imports another (the
import-linter contracts of pyproject.toml). `channels` (where people and agents talk to the bot),
`http` (the one web app: API, console, the channels' endpoints), `redis` (the stored state),
`deployers` (how a deploy is carried out), `probes` (a deploy's checks evaluated), `llm` (the
model, through BAML); and the bases every edge may share: `outbound` (calling someone's HTTP API)
and `github_api` (GitHub's REST API)."""

__all__ = ["channels", "deployers", "github_api", "http", "llm", "outbound", "probes", "redis"]
