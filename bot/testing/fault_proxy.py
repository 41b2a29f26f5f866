"""A TCP proxy between a client and a real server that can misbehave on demand, for fault
tests (a Redis partition, a slow link, a dropped connection):

    proxy = await FaultProxy("127.0.0.1", redis_port).start()   # or .start_in_thread()
    ... point the client at 127.0.0.1:{proxy.port} ...
    proxy.blackhole()   # connections stay open, nothing goes through (a partition)
    proxy.heal()        # everything flows again; what was held is delivered, in order
    proxy.latency(200)  # every chunk, both ways, 200 ms late
    proxy.cut()         # every connection closed; new ones too, until heal()
    await proxy.stop()

It runs on an event loop of its own, in a thread, so a test may drive it from asyncio or from
plain threads alike: the mode switches are thread-safe and return once they hold.
A blackhole holds bytes instead of dropping them, as TCP does during a partition (the sender
retransmits): after heal() they arrive late rather than out of order or never.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

CHUNK = 65536


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1", port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.host, self.port = host, port
        self.delay = 0.0  # seconds each chunk waits (latency)
        self.refusing = False  # cut: new connections are closed at once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None  # cleared while blackholed
        self._writers: set[asyncio.StreamWriter] = set()

    # --- start and stop, from asyncio or a thread --------------------------------------------

    def start_in_thread(self) -> FaultProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fault-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        if self._server is None:
            raise RuntimeError(f"the fault proxy could not listen on {self.host}:{self.port}")
        return self

    async def start(self) -> FaultProxy:
        return await asyncio.to_thread(self.start_in_thread)

    def stop_in_thread(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._loop = self._thread = None

    async def stop(self) -> None:
        await asyncio.to_thread(self.stop_in_thread)

    def __enter__(self) -> FaultProxy:
        return self.start_in_thread()

    def __exit__(self, *_: Any) -> None:
        self.stop_in_thread()

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *_: Any) -> None:
        await self.stop()

    # --- the faults ------------------------------------------------------------------------

    def heal(self) -> None:
        """Pass everything through again, at once."""
        self._call(self._set(delay=0.0, refusing=False, flowing=True))

    def latency(self, ms: float) -> None:
        self._call(self._set(delay=ms / 1000, refusing=False, flowing=True))

    def blackhole(self) -> None:
        """Accept connections and hold them open, forwarding nothing either way."""
        self._call(self._set(delay=0.0, refusing=False, flowing=False))

    def cut(self) -> None:
        """Close every connection, and each new one as it comes, until heal()."""
        self._call(self._set(delay=0.0, refusing=True, flowing=True))
        self._call(self._close_all())

    @property
    def connections(self) -> int:
        """Client connections open now."""
        return len(self._writers) // 2

    # --- inside the proxy's loop ---------------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._listen())
        finally:
            ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def _call(self, coroutine: Any) -> Any:
        assert self._loop is not None, "the fault proxy is not running"
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)

    async def _set(self, delay: float, refusing: bool, flowing: bool) -> None:
        assert self._flowing is not None
        self.delay, self.refusing = delay, refusing
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            client_writer.close()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return
        self._writers |= {client_writer, server_writer}
        await asyncio.gather(
            self._pump(client_reader, server_writer, client_writer),
            self._pump(server_reader, client_writer, server_writer),
        )

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    other: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        try:
            while data := await reader.read(CHUNK):
                await self._flowing.wait()  # a blackhole holds the chunk here
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:  # one side gone: the other is closed too, as a broken link would be
            for w in (writer, other):
                self._writers.discard(w)
                w.close()

    async def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _shutdown(self) -> None:
        assert self._server is not None and self._flowing is not None
        self._server.close()
        self._flowing.set()
        await self._close_all()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
