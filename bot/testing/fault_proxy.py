"""A TCP proxy to put between a process and a server (Redis, an SMTP server, an HTTP
stand-in) and break the way networks break, for tests of what the bot does meanwhile:

    latency(s)   every chunk, either way, waits `s` seconds before it is passed on
    cut()        every connection is closed at once, and new ones are closed as they come
                 (a server that went away: clients see resets and refusals)
    blackhole()  connections stay open but nothing passes either way, and new ones are
                 accepted but go nowhere (a partition: packets dropped, TCP retrying); what
                 was sent meanwhile arrives once healed, as TCP would deliver it
    heal()       back to passing everything at once

It runs in a thread of its own with its own event loop, so a test in any event loop (or a
process outside the test) can be put behind it; its methods may be called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field

CHUNK = 65536


@dataclass
class _State:
    latency: float = 0.0
    cut: bool = False
    passing: asyncio.Event = field(default_factory=asyncio.Event)  # set: not blackholed


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.host = host
        self.port = 0  # the proxy's, once started
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._state: _State | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._serving: set[asyncio.Task[None]] = set()  # one per connection: ended by stop()

    def start(self) -> FaultProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def stop(self) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def latency(self, seconds: float) -> None:
        self._call(self._set(latency=seconds))

    def cut(self) -> None:
        self._call(self._set(cut=True))

    def blackhole(self) -> None:
        self._call(self._set(passing=False))

    def heal(self) -> None:
        self._call(self._set(latency=0.0, cut=False, passing=True))

    def _call(self, coroutine: Coroutine[object, object, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)

    async def _start(self) -> None:
        self._state = _State()
        self._state.passing.set()
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._close_all()
        for task in self._serving:
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)

    async def _set(self, latency: float | None = None, cut: bool | None = None, passing: bool | None = None) -> None:
        state = self._require()
        if latency is not None:
            state.latency = latency
        if cut is not None:
            state.cut = cut
            if cut:
                self._close_all()
        if passing is True:
            state.passing.set()
        elif passing is False:
            state.passing.clear()

    def _require(self) -> _State:
        assert self._state is not None, "start() the proxy first"
        return self._state

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()  # a reset, not a polite close: what a vanished server looks like
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        try:
            await self._relay(reader, writer)
        finally:
            self._serving.discard(task)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state = self._require()
        if state.cut:
            writer.transport.abort()
            return
        self._writers.add(writer)
        await state.passing.wait()  # a blackholed connect goes nowhere until healed
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            self._drop(writer)
            return
        self._writers.add(upstream)
        await asyncio.gather(self._pump(reader, upstream), self._pump(upstream_reader, writer))
        self._drop(writer)
        self._drop(upstream)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state = self._require()
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(CHUNK):
                if state.latency:
                    await asyncio.sleep(state.latency)
                await state.passing.wait()
                if state.cut or writer.is_closing():
                    return
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            if not writer.is_closing():
                writer.write_eof()

    def _drop(self, writer: asyncio.StreamWriter) -> None:
        self._writers.discard(writer)
        if not writer.is_closing():
            writer.close()
