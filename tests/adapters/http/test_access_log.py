"""The access log never holds a secret passed in a query string."""

from __future__ import annotations

import logging

from bot.adapters.http.logs import RedactSecrets, redact_query


def access_record(path: str) -> logging.LogRecord:
    """A record as uvicorn's HTTP protocols log it."""
    return logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                             ("127.0.0.1:5555", "POST", path, "1.1", 200), None)


def test_the_access_log_filter_redacts_query_secrets():
    record = access_record("/email/inbound?a=1&secret=hunter2&b=2")
    assert RedactSecrets().filter(record)
    # (the transcript's redaction, which the filter also applies, takes the rest of the query with it)
    assert record.getMessage() == '127.0.0.1:5555 - "POST /email/inbound?a=1&secret=[redacted] HTTP/1.1" 200'
    # The names the app would read as "secret", however they are spelled in the URL.
    assert redact_query("/x?%73ecret=hunter2") == "/x?%73ecret=[redacted]"
    assert redact_query("/x?token=t&secret=") == "/x?token=[redacted]&secret=[redacted]"
    assert redact_query("/x?secrets=kept&y=secret=1") == "/x?secrets=kept&y=secret=1"
