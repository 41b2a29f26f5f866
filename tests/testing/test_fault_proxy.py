"""bot/testing/fault_proxy.py, the fault suite's TCP proxy, against a real echo server:
what passes when healed, what a cut and a blackhole do to connections old and new."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from bot.testing.fault_proxy import FaultProxy

pytestmark = [pytest.mark.network]


@pytest.fixture
async def echo() -> AsyncIterator[int]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


@pytest.fixture
def proxy(echo: int) -> Iterator[FaultProxy]:
    proxy = FaultProxy("127.0.0.1", echo).start_in_thread()
    yield proxy
    proxy.stop_in_thread()


async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, text: bytes) -> bytes:
    writer.write(text)
    await writer.drain()
    return await reader.readexactly(len(text))


async def test_a_healed_proxy_passes_everything_and_latency_delays_without_losing(proxy):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    assert await ask(reader, writer, b"ping") == b"ping"
    proxy.latency(50)
    assert await ask(reader, writer, b"slow but whole") == b"slow but whole"
    writer.close()


async def test_a_cut_resets_open_connections_and_refuses_new_ones_until_healed(proxy):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    assert await ask(reader, writer, b"before") == b"before"
    proxy.cut()
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        await ask(reader, writer, b"during")
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        await ask(reader, writer, b"a new one")
    proxy.heal()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    assert await ask(reader, writer, b"after") == b"after"
    writer.close()


async def test_a_blackhole_holds_what_was_sent_and_delivers_it_once_healed(proxy):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    proxy.blackhole()
    held = asyncio.create_task(ask(reader, writer, b"held"))
    fresh = asyncio.create_task(ask(*await asyncio.open_connection("127.0.0.1", proxy.port), b"new"))
    done, _ = await asyncio.wait([held, fresh], timeout=1)
    assert done == set()  # nothing passes either way while it lasts
    proxy.heal()
    assert await held == b"held" and await fresh == b"new"
    writer.close()
