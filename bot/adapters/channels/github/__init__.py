"""GitHub as a channel: `webhook` (deliveries in, starting the threads `[[triggers]]` ask for),
`deployments` (each deploy shown as a GitHub deployment with its statuses) and `gate` (deploybot
as the deployment protection rule of GitHub environments: docs/github-gate.md). The names the
composition root uses are importable from here."""

from bot.adapters.channels.github.deployments import GitHubDeployments
from bot.adapters.channels.github.gate import GitHubGate
from bot.adapters.channels.github.kind import KIND, normalise_login
from bot.adapters.channels.github.webhook import GitHubWebhook

__all__ = ["KIND", "GitHubDeployments", "GitHubGate", "GitHubWebhook", "normalise_login"]
