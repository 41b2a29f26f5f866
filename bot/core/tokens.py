"""A personal API token's prefix, the one place it is written. Pure.

What makes tokens (bot/adapters/redis/credentials.py), what recognises one in a request
(bot/adapters/http/auth.py) and what names one to people (help, wording) read it here. The
rest of the format (id, secret, checksum) is credentials.py's."""

PERSONAL_TOKEN_PREFIX = "dbt_"
