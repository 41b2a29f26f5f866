from __future__ import annotations

import json

from bot.core import events as ev


def test_every_event_roundtrips_through_json():
    samples = [
        ev.UserMessage(text="hi", user="a"),
        ev.DeployFrontend(tag="v1", environment="staging", reason="r"),
        ev.GitTagsResult(step_id="s", tags=[ev.GitTag(name="v1", commit="abc")]),
        ev.Error(kind="llm", message="x", step_id="s"),
    ]
    for e in samples:
        assert ev.load(ev.dump(e)) == e


def test_events_written_before_a_field_existed_still_load():
    old = {"type": "deploy_started", "id": "1", "at": "2026-01-01T00:00:00Z", "step_id": "s", "deploy_id": "d"}
    loaded = ev.load(json.dumps(old))
    assert isinstance(loaded, ev.DeployStarted) and loaded.commit == ""
    old_msg = {"type": "user_message", "id": "2", "at": "2026-01-01T00:00:00Z", "text": "hi", "user": "a"}
    assert ev.load(json.dumps(old_msg)).channel == "api"
