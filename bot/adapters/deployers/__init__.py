"""How a deploy is carried out, and where versions come from: `command` (a local git repository
and a command; `dry_run` the out-of-the-box one, `git_refs` noticing new tags), `github_actions`
(workflow_dispatch and GitHub's tags), `pair` (a deployer from its two parts), `prefixed` (one
service's share of a monorepo), `commit_times` (commit dates for delivery metrics),
`tag_order` (newest first), `output` (a deploy command's output as it comes).
bot/wiring/deployers.py builds each service's deployer from the settings."""

__all__ = [
    "command", "commit_times", "dry_run", "git_refs", "github_actions", "output", "pair", "prefixed", "tag_order"
]
