"""Retention with short times (THREAD_RETENTION=2 s), against a real Redis and the served app:
what goes, what stays, and the audit trail that outlives its thread."""

from __future__ import annotations

import pytest

from bot.adapters.channels.email import names as email_names
from bot.adapters.channels.slack import names as slack_names
from bot.core.events import DoneForNow, UserMessage
from bot.core.thread import Origin
from bot.runtime.ports import ThreadNotFound
from tests.end_to_end.test_api import paused_for_approval
from tests.helpers import eventually, reply, settle
from tests.runtime.ports.test_status_index import waiting_events

pytestmark = [pytest.mark.redis, pytest.mark.network]

RETENTION = 2.0


@pytest.fixture
def settings(settings):
    # gc_every: the workers' own passes stay out of the way of the passes these tests make.
    return settings.model_copy(update={"thread_retention": RETENTION, "thread_compact_after": 1.0,
                                       "gc_every": 3600.0})


async def thread_keys(app, thread_id: str) -> list[bytes]:
    return [k async for k in app.redis.scan_iter(match=f"*{{{thread_id}}}*")]


async def deployed_to_production(api, app, fake_llm) -> dict:
    thread = await paused_for_approval(api, fake_llm)
    fake_llm.script(reply(intent="done_for_now", message="Deployed backend v1.2.3 to production."))
    r = await api.post(f"/threads/{thread['id']}/responses",
                       json={"user": "bob", "approval_id": thread["pending_approval"]["approval_id"], "approve": True})
    assert r.status_code == 202, r.text
    done = await settle(api, thread["id"])
    assert done["status"] == "done"
    return done


async def test_a_finished_thread_goes_with_its_keys_an_active_one_stays_the_audit_trail_outlives_it(api, app,
                                                                                                     fake_llm):
    done = await deployed_to_production(api, app, fake_llm)
    tid = done["id"]
    result = next(e for e in done["events"] if e["type"] == "deploy_result")
    # What channels bind to a thread: a Slack conversation, an email's Message-ID, an approval's message.
    assert (await app.inbox.receive(slack_names.slack_conversation("C1", "1.5"), "m1", 60, tid))[2]
    await app.inbox.link(email_names.email_message("<m1@example.com>"), tid, tid)
    await app.inbox.link(slack_names.slack_approval_message("ap1"), "1.6", tid)
    active = await app.store.create(Origin(), waiting_events())
    await app.inbox.link(email_names.email_approval("ap2"), active.id, active.id)
    assert await thread_keys(app, tid)

    # finished for longer than THREAD_COMPACT_AFTER (1 s), not THREAD_RETENTION (2 s)
    await eventually(lambda: app.store.compactable(1.0, 10), message="never compactable")
    report = await app.collector.collect()
    assert report.threads == [] and report.compacted == 1
    assert (await app.store.load(tid)).version == len(done["events"])  # the same thread, stored smaller
    assert await app.redis.exists(app.store.keys.packed(tid))

    await eventually(lambda: app.store.finished(RETENTION, 10), message="never finished for THREAD_RETENTION")
    dry = await app.collector.collect(dry_run=True)
    assert dry.threads == [tid]
    assert (await app.store.load(tid)).id == tid  # a dry run removes nothing
    assert await app.inbox.lookup(email_names.email_message("<m1@example.com>")) == tid

    report = await app.collector.collect()
    assert report.threads == [tid] and report.names == 3
    with pytest.raises(ThreadNotFound):
        await app.store.load(tid)
    assert await thread_keys(app, tid) == []
    assert await app.redis.hget(app.store.keys.indexed(), tid) is None
    assert tid not in await app.store.recent(100)
    for name in (email_names.email_message("<m1@example.com>"), slack_names.slack_approval_message("ap1")):
        assert await app.inbox.lookup(name) is None
    assert not await app.redis.exists(app.inbox.keys.conversation(slack_names.slack_conversation("C1", "1.5")))
    # the active thread and what is bound to it stay
    assert (await app.store.load(active.id)).status() == "waiting_for_approval"
    assert await app.inbox.lookup(email_names.email_approval("ap2")) == active.id

    # The history record keeps the audit trail, and the console shows it from there.
    [record] = await app.environments.recent("production", 10)
    assert record.deploy_id == result["deploy_id"]
    assert record.requested_by == "alice" and record.request == "deploy the latest backend to production"
    assert record.proposed_by == "llm" and record.proposal_reason == "newest tag" and record.proposed_at
    assert record.decided_by == "bob" and record.decided_channel == "api" and record.decided_at
    assert record.approval_id == done["events"][4]["approval_id"] and record.started_at
    assert record.exit_code == 0 and record.output_tail
    page = await api.get(f"/console/deploys/production/{record.deploy_id}")
    assert page.status_code == 200
    html = page.text
    for shown in ("deploy the latest backend to production", "newest tag", "bob", record.approval_id,
                  record.deploy_id, "exit code 0"):
        assert shown in html, shown
    assert "Not found in the thread" not in html
    export = (await api.get("/console/deploys.jsonl?environment=production")).text
    assert '"decided_by": "bob"' in export and '"requested_by": "alice"' in export


async def test_a_late_reply_brings_a_finished_thread_back_and_it_is_kept(app):
    thread = await app.store.create(Origin(), [UserMessage(text="hi", user="a"), DoneForNow(message="ok")])
    await eventually(lambda: app.store.finished(RETENTION, 10), message="never finished for THREAD_RETENTION")
    await app.service.respond(thread.id, "one more thing", app.service.unproven("alice"))  # indexed as running again
    report = await app.collector.collect()
    assert report.threads == [] and (await app.store.load(thread.id)).version == 3


async def test_the_workers_remove_finished_threads_continuously(settings, redis):
    from bot.wiring.app import build

    app = build(settings.model_copy(update={"thread_retention": 0.5, "gc_every": 0.2}))
    try:
        thread = await app.store.create(Origin(), [UserMessage(text="hi", user="a"), DoneForNow(message="ok")])
        await app.start(worker=True, receive=False)

        async def gone() -> bool:
            try:
                await app.store.load(thread.id)
            except ThreadNotFound:
                return True
            return False

        await eventually(gone, within=10)
    finally:
        await app.close()


async def test_gc_dry_run_on_the_command_line_lists_without_deleting(app, redis_url, tmp_path, monkeypatch, capsys):
    from bot.__main__ import _gc, parser
    from bot.config.settings import Settings

    thread = await app.store.create(Origin(), [UserMessage(text="hi", user="a"), DoneForNow(message="ok")])
    await eventually(lambda: app.store.finished(0.5, 10), message="never finished for 0.5 s")
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("THREAD_RETENTION", "0.5")
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    settings = Settings(_env_file=None)
    assert await _gc(settings, parser().parse_args(["gc", "--dry-run"])) == 0
    said = capsys.readouterr().out
    assert "1 would go" in said and f"thread {thread.id}" in said
    assert (await app.store.load(thread.id)).id == thread.id
    assert await _gc(settings, parser().parse_args(["gc"])) == 0
    assert "1 went" in capsys.readouterr().out
    with pytest.raises(ThreadNotFound):
        await app.store.load(thread.id)
