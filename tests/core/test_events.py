from __future__ import annotations

import json
import typing
from pathlib import Path

from bot.core import events as ev

# One event of every type, every field set, as deploybot stores them: written once and never
# regenerated, so a change to how any event loads or is stored again shows here.
STORED = Path(__file__).with_name("stored_events.jsonl")


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


def test_a_stored_event_of_every_type_still_loads_and_is_stored_again_alike():
    lines = STORED.read_text().splitlines()
    loaded = [ev.load(line) for line in lines]
    union = typing.get_args(typing.get_args(ev.Event)[0])
    assert sorted(type(e).__name__ for e in loaded) == sorted(kind.__name__ for kind in union), "one line per type"
    for line, event in zip(lines, loaded, strict=True):
        assert ev.dump(event) == line


def test_a_table_per_event_type_is_read_by_class_then_by_base_class():
    table = {ev.DeployService: "service", ev._Deploy: "any deploy", ev.UserMessage: "said"}
    assert ev.entry_for(table, ev.DeployService(service="web", tag="v1", environment="prod")) == "service"
    assert ev.entry_for(table, ev.DeployBackend(tag="v1", environment="prod")) == "any deploy"
    assert ev.entry_for(table, ev.UserMessage(text="hi", user="bob")) == "said"
    assert ev.entry_for(table, ev.DoneForNow(message="bye")) is None


def test_every_event_type_has_its_prompt_block_and_transcript_line():
    """A new event the model or a person may meet is given its words: the prompt and the
    transcript look events up by class, and a missing entry would fail a run (a sender
    confirmation reaching the model once did)."""
    import typing

    from bot.core import prompt, transcript
    from bot.core.events import Event, entry_for

    union = typing.get_args(typing.get_args(Event)[0])
    assert len(union) > 20
    for kind in union:
        assert prompt.blocks.BLOCKS.get(kind) or entry_for(prompt.blocks.BLOCKS, kind.model_construct()), kind
        assert transcript._LINES.get(kind) or entry_for(transcript._LINES, kind.model_construct()), kind
