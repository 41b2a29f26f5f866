"""The names data is stored under: earlier versions' data must still be found, so these strings never change."""

from __future__ import annotations

from bot.adapters.channels.email import names as email
from bot.adapters.channels.github import names as github
from bot.adapters.channels.slack import names as slack
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
    assert keys.conversation("slack:C1:1.0") == "deploybot:conversation:{slack:C1:1.0}"
    assert keys.delivery("email:inbound", "<m@x>") == "deploybot:conversation:{email:inbound}:seen:<m@x>"
    assert keys.ref("email:msg:<m@x>") == "deploybot:ref:email:msg:<m@x>"
    assert keys.work() == "deploybot:work"
    assert keys.turn("sweep") == "deploybot:work:turn:sweep"
    assert keys.lease("t") == "deploybot:thread:{t}:lease"
    assert keys.recent() == "deploybot:threads:recent"
    assert keys.lock("prod") == "deploybot:lock:prod"
    assert keys.history("prod") == "deploybot:deploys:prod"


def test_slack_names_are_unchanged():
    """Each channel's names moved into its package with the strings they had in
    bot/adapters/redis/keys.py: data stored by earlier versions must still be found."""
    assert slack.slack_conversation("C1", "1.0") == "slack:C1:1.0"
    assert slack.slack_approval_message("a1") == "slack:approval-message:a1"
    assert slack.slack_notify_root("t1", "C1") == "slack:notify-root:t1:C1"
    assert slack.slack_notify_approval_message("a1", "C1") == "slack:notify-approval:a1:C1"
    assert slack.slack_command("tr1") == "slack:command:tr1"
    assert slack.slack_dm_approval("a1", "U1") == "slack:dm-approval:a1:U1"


def test_email_names_are_unchanged():
    assert email.EMAIL_INBOUND == "email:inbound"
    assert email.EMAIL_UNCONFIRMED == "email:unconfirmed"
    assert email.EMAIL_CONFIRMATIONS_MAILED == "email:confirmations-mailed"
    assert email.email_notify_root("t1", "a@x") == "email:notify-root:t1:a@x"
    assert email.email_message("<m@x>") == "email:msg:<m@x>"
    assert email.email_sent("<m@x>") == "email:sent:<m@x>"
    assert email.email_approval("a1") == "email:approval:a1"
    assert email.email_confirmation("c1") == "email:confirmation:c1"


def test_github_names_are_unchanged():
    assert github.GITHUB_DELIVERIES == "github:deliveries"
    assert github.GITHUB_BODIES == "github:bodies"
    assert github.github_deployment("t1-s1") == "github:deployment:t1-s1"
    assert github.github_gate("t1") == "github:gate:t1"
    assert github.github_gate_answer("t1") == "github:gate:answer:t1"
    assert github.github_gate_sent("t1") == "github:gate:sent:t1"
    assert github.github_gate_commit("api", "abc") == "github:gate:commit:api:abc"


def test_every_channel_name_is_pinned():
    """A name added to a channel's names is added here too."""
    pinned = {
        slack: 6, email: 8, github: 7,
    }
    for module, count in pinned.items():
        public = [n for n in vars(module) if not n.startswith("_") and n != "annotations"]
        assert len(public) == count, (module.__name__, public)


def test_keys_of_one_thread_share_a_cluster_hash_tag():
    keys = Keys("deploybot")
    assert keys.events("abc") == "deploybot:thread:{abc}:events"
    assert keys.meta("abc") == "deploybot:thread:{abc}:meta"
