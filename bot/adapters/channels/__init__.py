"""The channels: where people and agents ask, approve and are told. A channel of more than one
job is a package (`slack`, `email`, `github`: the webhook, the deployments and the gate; `mcp`:
the server and its stdio bridge); a channel of one job is one module (`cli`,
`outgoing_webhooks`, `log`), and `deliveries` is what the channels that send in the background
share. bot/wiring/channels.py builds each from the settings, by kind."""

__all__ = ["cli", "deliveries", "email", "github", "log", "mcp", "outgoing_webhooks", "slack"]
