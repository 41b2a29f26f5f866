"""The channels: where people and agents ask, approve and are told. A chat or mail channel is a
package (`slack`, `email`, `github`: the webhook, the deployments and the gate); the others are
one module each (`cli`, `mcp` and its stdio `mcp_bridge`, `outgoing_webhooks`, `log`), and
`deliveries` is what the channels that send in the background share. bot/wiring/channels.py
builds each from the settings, by kind."""

__all__ = ["cli", "deliveries", "email", "github", "log", "mcp", "mcp_bridge", "outgoing_webhooks", "slack"]
