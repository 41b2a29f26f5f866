"""The names data is stored under: earlier versions' data must still be found, so these strings never change."""

from __future__ import annotations

from bot.adapters.redis import keys as names
from bot.adapters.redis.keys import Keys


def test_credential_names_are_unchanged():
    """Data stored by earlier versions must still be found: these strings never change."""
    keys = Keys("deploybot")
    assert keys.api_token("ab12") == "deploybot:{api-tokens}:ab12"
    assert keys.api_tokens() == "deploybot:{api-tokens}"
    assert keys.sign_in_link("f00") == "deploybot:sign-in:f00"
    assert keys.ended_session("s1") == "deploybot:session-ended:s1"


def test_conversation_inbox_and_work_names_are_unchanged():
    """Data stored by earlier versions must still be found: these strings never change."""
    keys = Keys("deploybot")
    assert names.slack_conversation("C1", "1.0") == "slack:C1:1.0"
    assert names.slack_approval_message("a1") == "slack:approval-message:a1"
    assert names.email_message("<m@x>") == "email:msg:<m@x>"
    assert names.email_approval("a1") == "email:approval:a1"
    assert names.EMAIL_INBOUND == "email:inbound"
    assert keys.conversation("slack:C1:1.0") == "deploybot:conversation:{slack:C1:1.0}"
    assert keys.delivery("email:inbound", "<m@x>") == "deploybot:conversation:{email:inbound}:seen:<m@x>"
    assert keys.ref("email:msg:<m@x>") == "deploybot:ref:email:msg:<m@x>"
    assert keys.work() == "deploybot:work"
    assert keys.turn("sweep") == "deploybot:work:turn:sweep"
    assert keys.lease("t") == "deploybot:thread:{t}:lease"
    assert keys.recent() == "deploybot:threads:recent"
    assert keys.lock("prod") == "deploybot:lock:prod"
    assert keys.history("prod") == "deploybot:deploys:prod"


def test_keys_of_one_thread_share_a_cluster_hash_tag():
    keys = Keys("deploybot")
    assert keys.events("abc") == "deploybot:thread:{abc}:events"
    assert keys.meta("abc") == "deploybot:thread:{abc}:meta"
