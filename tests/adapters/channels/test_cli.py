"""`python -m bot ...` as a user runs it: real processes, stdin and stdout."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from bot.testing.cluster import clean_env
from tests.helpers import ledger_lines

pytestmark = [pytest.mark.redis, pytest.mark.processes]


@pytest.fixture
def env(git_repo, deploy_command, tmp_path) -> dict[str, str]:
    return clean_env(GIT_REPO=str(git_repo), DEPLOY_COMMAND=deploy_command, DATA_DIR=str(tmp_path / "data"))


def bot(env: dict[str, str], *args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, "-m", "bot", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )
    if check and out.returncode != 0:
        raise AssertionError(f"exit {out.returncode}\n{out.stdout}\n{out.stderr}")
    return out


@pytest.fixture
def shared_env(env, redis_url, redis) -> dict[str, str]:
    return {**env, "REDIS_URL": redis_url}


def test_chat_proposes_asks_deploys_and_reports(shared_env, ledger):
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", "--user", "alice", stdin="y\n")
    assert "proposes: deploy backend v1.2.3 to production" in out.stdout
    assert "approval needed" in out.stdout and "deployed: backend v1.2.3 to production" in out.stdout
    assert out.stdout.rstrip().endswith("[done]")
    assert len(ledger_lines(ledger)) == 1


def test_chat_takes_every_approval_word(shared_env, ledger):
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", stdin="Ship it\n")
    assert "deployed: backend v1.2.3 to production" in out.stdout
    assert len(ledger_lines(ledger)) == 1


def test_chat_rejection_without_llm_deploys_nothing(shared_env, ledger):
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", stdin="not during the freeze\n", check=False)
    assert "rejected: not during the freeze" in out.stdout and "Not deployed" in out.stdout
    assert ledger_lines(ledger) == []


def test_free_text_without_llm_explains_how_to_configure_one(shared_env):
    out = bot(shared_env, "chat", "please deploy the latest backend", stdin="")
    assert "no LLM is configured" in out.stdout and "LLM_PROVIDER" in out.stdout
    assert "[done]" in out.stdout  # ended with how to go on, not waiting for an answer forever


def test_pause_in_one_process_approve_from_another(shared_env, ledger):
    out = bot(shared_env, "chat", "deploy frontend v1.2.1 to production", stdin="")
    thread_id = re.search(r"thread (\w+)", out.stdout)[1]
    assert "[waiting_for_approval]" in out.stdout and ledger_lines(ledger) == []

    shown = json.loads(bot(shared_env, "threads", "show", thread_id).stdout)
    approval_id = shown["pending_approval"]["approval_id"]
    refused = bot(shared_env, "threads", "respond", thread_id, "--approve", "--approval-id", "wrong", check=False)
    assert refused.returncode == 1 and "refused: " in refused.stderr

    out = bot(shared_env, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id, "--user", "bob")
    assert "deployed: frontend v1.2.1 to production" in out.stdout and "[done]" in out.stdout
    assert len(ledger_lines(ledger)) == 1

    listed = bot(shared_env, "threads", "list", "--status", "done").stdout
    assert thread_id in listed
    md = bot(shared_env, "threads", "show", thread_id, "--markdown").stdout
    assert md.startswith(f"# Thread {thread_id}") and "**bob** approved" in md
    refused = bot(shared_env, "threads", "cancel", thread_id, "--user", "bob", check=False)
    assert refused.returncode == 1 and "this thread is finished (deployed); nothing to cancel" in refused.stderr

    forked = bot(shared_env, "threads", "fork", thread_id, "--at", "1").stdout
    fork_id = re.search(r"new thread (\w+)", forked)[1]
    assert "[waiting_for_approval]" in forked
    bot(shared_env, "threads", "cancel", fork_id, "--reason", "not needed")
    assert json.loads(bot(shared_env, "threads", "show", fork_id).stdout)["status"] == "cancelled"


def test_embedded_redis_needs_no_configuration_and_keeps_threads_across_restarts(env):
    try:
        out = bot(env, "chat", "list tags")
        thread_id = re.search(r"thread (\w+)", out.stdout)[1]
        assert "Tags, newest first: v1.2.3" in out.stdout
        assert "stopped" in bot(env, "redis-stop").stdout
        shown = json.loads(bot(env, "threads", "show", thread_id).stdout)  # starts it again, from the AOF
        assert shown["status"] == "done" and shown["version"] == 4
    finally:
        bot(env, "redis-stop", check=False)


def test_half_configured_llm_fails_at_start_with_the_reason(env):
    out = bot({**env, "LLM_PROVIDER": "anthropic"}, "threads", "list", check=False)
    assert out.returncode == 2 and "LLM_PROVIDER=anthropic needs LLM_API_KEY" in out.stderr


def test_lock_and_unlock_from_the_terminal(shared_env, ledger):
    out = bot(shared_env, "lock", "production", "--reason", "release freeze", "--user", "carol")
    assert "Locked production: release freeze" in out.stdout
    blocked = bot(shared_env, "chat", "deploy backend v1.2.3 to production", stdin="y\n", check=False)
    assert "production is locked by carol" in blocked.stdout and ledger_lines(ledger) == []
    assert "Unlocked production" in bot(shared_env, "unlock", "production", "--user", "carol").stdout
    assert "Nothing has been deployed to production" in bot(shared_env, "deploys", "production").stdout


def test_serve_refuses_an_open_thread_api_when_slack_or_email_is_on(env):
    out = bot({**env, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}, "serve", check=False)
    assert out.returncode == 2 and "set API_TOKEN" in out.stderr


def test_user_names_a_person_of_deploybot_toml(shared_env, tmp_path, ledger):
    """`--user NAME` is the person the file names so: approvers decide by name, anyone else
    (a name the file does not know included) is refused, and so is the requester."""
    config = tmp_path / "deploybot.toml"
    config.write_text(
        '[people.alice]\nslack = "UALICE"\n\n[people.bob]\nemail = "bob@example.com"\n\n'
        '[people.dave]\nslack = "UDAVE"\n\n[groups]\nsre = ["alice", "bob"]\n\n'
        '[environments.production]\nprotected = true\napprovers = ["group:sre"]\napprover_must_differ = true\n'
    )
    env = {**shared_env, "DEPLOYBOT_CONFIG": str(config)}
    out = bot(env, "chat", "deploy backend v1.2.3 to production", "--user", "alice", stdin="")
    thread_id = re.search(r"thread (\w+)", out.stdout)[1]
    approval_id = json.loads(bot(env, "threads", "show", thread_id).stdout)["pending_approval"]["approval_id"]
    for user, why in (("dave", "dave is not an approver for production; the sre group may approve"),
                      ("mallory", "mallory is not an approver for production"),
                      ("alice", "alice asked for this deploy and cannot also approve it")):
        refused = bot(env, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id,
                      "--user", user, check=False)
        assert refused.returncode == 1 and why in refused.stderr, (user, refused.stderr)
    assert ledger_lines(ledger) == []
    out = bot(env, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id, "--user", "bob")
    assert "deployed: backend v1.2.3 to production" in out.stdout and len(ledger_lines(ledger)) == 1
    decision = next(e for e in json.loads(bot(env, "threads", "show", thread_id).stdout)["events"]
                    if e["type"] == "human_response")
    # recorded as named through the CLI, which runs where the bot's own secrets are: not proven otherwise
    assert (decision["person"], decision["via"], decision["evidence"]) == ("bob", "cli", "bob")


def test_chat_prints_each_event_once_and_the_piped_answer_after_its_prompt(shared_env):
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", "--user", "alice", stdin="y\n").stdout
    assert out.count("alice (cli): deploy backend v1.2.3 to production") == 1
    assert out.count("alice approved") == 1 and out.count("\nthread ") + out.startswith("thread ") == 1
    assert "rejects it as feedback] y\n  alice approved\n" in out


def test_chat_with_stdin_ended_says_the_command_that_answers_the_approval(shared_env):
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", stdin="").stdout
    thread_id = re.search(r"thread (\w+)", out)[1]
    approval_id = re.search(r"approval id (\w+)", out)[1]
    assert out.rstrip().endswith(
        f"[waiting_for_approval] thread {thread_id} is paused; answer it later with "
        f"`python -m bot threads respond {thread_id} --approve --approval-id {approval_id}`"
    )


def test_a_pending_approval_follows_the_rules_in_force_after_a_restart(shared_env, tmp_path, ledger):
    """Asked in open mode (one approval, anyone's), decided after a restart whose settings
    need two approvals from bob or carol: bob's alone deploys nothing and says so; carol's
    makes two. Each command is a new process over the same Redis: a restart each time."""
    out = bot(shared_env, "chat", "deploy backend v1.2.3 to production", "--user", "alice", stdin="")
    thread_id = re.search(r"thread (\w+)", out.stdout)[1]
    approval_id = re.search(r"approval id (\w+)", out.stdout)[1]
    config = tmp_path / "deploybot.toml"
    config.write_text(
        '[people.alice]\nslack = "UALICE"\n\n[people.bob]\nslack = "UBOB"\n\n[people.carol]\nslack = "UCAROL"\n\n'
        '[environments.production]\nprotected = true\napprovers = ["bob", "carol"]\nrequired_approvals = 2\n'
    )
    env = {**shared_env, "DEPLOYBOT_CONFIG": str(config)}
    out = bot(env, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id, "--user", "bob")
    assert "now needs 2 approvals, from bob or carol" in out.stdout and "[waiting_for_approval]" in out.stdout
    assert ledger_lines(ledger) == []
    out = bot(env, "threads", "respond", thread_id, "--approve", "--approval-id", approval_id, "--user", "carol")
    assert "deployed: backend v1.2.3 to production" in out.stdout and len(ledger_lines(ledger)) == 1
