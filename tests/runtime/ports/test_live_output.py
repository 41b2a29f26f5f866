"""A running deploy's output (LiveOutput): in order, the newest LIVE_LINES kept, each line cut,
one deploy's never another's."""

from __future__ import annotations

from bot.runtime.ports.output import LINE_CHARS, LIVE_LINES


async def test_lines_come_back_in_order_bounded_and_per_deploy(backend):
    output = backend.output
    assert await output.tail("d1") == []
    await output.append("d1", ["starting", "ünïcode ✓"])
    await output.append("d1", [])
    await output.append("d2", ["another deploy"])
    assert await output.tail("d1") == ["starting", "ünïcode ✓"]
    await output.append("d1", [f"line {i}" for i in range(LIVE_LINES + 5)] + ["x" * (LINE_CHARS + 50)])
    tail = await output.tail("d1")
    assert len(tail) == LIVE_LINES and tail[-1] == "x" * LINE_CHARS and tail[0] == "line 6"
    assert await output.tail("d2") == ["another deploy"]
