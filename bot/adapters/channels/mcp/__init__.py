"""MCP as a channel: `server` (the Model Context Protocol at /mcp on the web server, where AI
agents ask for deploys and only people approve) and `bridge` (`python -m bot mcp`, the stdio
bridge an agent's client spawns, holding only the agent's token). The names the composition
root uses are importable from here."""

from bot.adapters.channels.mcp.server import MAX_WAIT, PATH, Tools, WithMcp, server

__all__ = ["MAX_WAIT", "PATH", "Tools", "WithMcp", "server"]
