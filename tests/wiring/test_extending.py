"""docs/extending.md, done: a new channel and a new deployer, each written as the doc says and
registered with its one line (here with monkeypatch.setitem, as a test cannot edit
bot/wiring), then used end to end over the in-memory fakes: the channel's route is served
behind the front door with the body limit it declared, what it hears starts a thread, and
its notifier tells of what the run did; the deployer is built by kind from deploybot.toml,
resolves tags through the versions it reuses and runs the approved commit.

Files each touched (besides its settings): the channel, a module of its own (here the
MemoChannel class below) and one entry in bot/wiring/channels.CHANNELS; the deployer, a
module of its own (here RecordingRunner and `recording`) and one entry in
bot/wiring/deployers.DEPLOYERS."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as StarletteRoute

from bot.adapters.deployers.pair import Pair
from bot.adapters.http.front_door import Auth, HttpLimits
from bot.config.settings import ServiceSettings, Settings
from bot.core.events import DeployResult, Event
from bot.core.people import Identity
from bot.core.thread import Thread
from bot.runtime.ports import Channel, Deployer, DeployOutcome, DeployRequest, Notifier, Route
from bot.runtime.service import ThreadService
from bot.testing.memory import MemoryDeployer, MemoryInbox
from bot.wiring import channels as channel_registry
from bot.wiring import deployers as deployer_registry
from bot.wiring.app import Fanout, http_limits
from tests import ROOT
from tests.memory_parts import TAGS, Parts, make_runner
from tests.people_kinds import KINDS

MEMO_SECRET = "memo-shared-secret"
MEMO_MAX_BYTES = 1024


# --- a new channel: "memo" -------------------------------------------------------------------


class MemoChannel:
    """POST /memo/say {"from": name, "text": ...} with X-Memo-Secret starts a thread; it tells
    its people by keeping what happened in `told` (a real one would post it somewhere)."""

    def __init__(self, secret: str, service: ThreadService, kick) -> None:
        self.secret, self.service, self.kick = secret, service, kick
        self.told: list[tuple[str, str]] = []
        self.running: bool | None = None

    async def endpoint(self, request: Request) -> Response:
        if request.headers.get("x-memo-secret") != self.secret:  # how it proves who is speaking
            return JSONResponse({"detail": "wrong memo secret"}, status_code=401)
        body = await request.json()
        who = Identity(None, "memo", str(body["from"]))
        thread = await self.service.launch(str(body["text"]), who, channel="memo")
        await self.kick(thread.id)
        return JSONResponse({"id": thread.id})

    def routes(self) -> Sequence[Route]:
        return (Route("/memo/say", self.endpoint),)

    def notifier(self) -> Notifier | None:
        return self

    async def publish(self, thread: Thread, new: Sequence[Event]) -> None:
        self.told += [(thread.id, event.type) for event in new]

    async def start(self, receive: bool) -> None:
        self.running = receive

    async def stop(self) -> None:
        self.running = None


def memo(parts: channel_registry.Parts) -> Channel | None:
    """The builder: its settings would say whether it is on (here: always)."""
    return MemoChannel(MEMO_SECRET, parts.service, parts.kick)


MEMO = channel_registry.Kind("X-Memo-Secret, a secret shared with the memo service", memo,
                             lambda settings: (("/memo/say", MEMO_MAX_BYTES),))


async def test_a_new_channel_is_served_with_its_limits_hears_and_tells(monkeypatch):
    monkeypatch.setitem(channel_registry.CHANNELS, "memo", MEMO)  # the one line of registration
    world = Parts()
    runner = make_runner(world)
    kicked: list[str] = []

    async def kick(thread_id: str) -> None:
        kicked.append(thread_id)

    fanout = Fanout([])
    service = ThreadService(world.store, world.policy, fanout, world.clock)
    settings = Settings(_env_file=None)
    built = channel_registry.make_channels(channel_registry.Parts(
        settings, service, MemoryInbox(), kick, None, world.policy,  # type: ignore[arg-type]
        printer=world.notifier,
    ))
    assert list(built) == ["log", "memo"]  # Slack, email and the rest are off in these settings
    channel = built["memo"]
    assert isinstance(channel, MemoChannel)
    fanout.notifiers += [n for c in built.values() if (n := c.notifier()) is not None]
    runner.notifier = fanout
    await channel.start(True)
    assert channel.running is True

    # Served as `serve` serves the channels: behind the front door, whose table has its path.
    web = Starlette(routes=[StarletteRoute(r.path, r.endpoint, methods=["POST"]) for c in built.values()
                            for r in c.routes()])
    door = HttpLimits(web, Auth("api-token"), limits=http_limits(settings))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=door), base_url="http://127.0.0.1") as http:
        # No API token asked (the channel proves who is speaking itself), but its secret is.
        stranger = await http.post("/memo/say", json={"from": "x", "text": "hi"})
        assert stranger.status_code == 401 and stranger.json() == {"detail": "wrong memo secret"}
        assert (await http.post("/threads", json={"text": "hi"})).status_code == 401  # the API's path asks the token
        big = {"from": "dana", "text": "x" * MEMO_MAX_BYTES}
        assert (await http.post("/memo/say", json=big, headers={"X-Memo-Secret": MEMO_SECRET})).status_code == 413
        said = await http.post("/memo/say", json={"from": "dana", "text": "what's on staging?"},
                               headers={"X-Memo-Secret": MEMO_SECRET})
    assert said.status_code == 200 and kicked == [said.json()["id"]] and not channel.told[1:]

    done = await runner.run(kicked[0])
    assert done.status() == "done" and done.origin.channel == "memo"
    told = [kind for thread_id, kind in channel.told if thread_id == done.id]
    assert told[0] == "user_message" and "command_result" in told  # what the run did, told by the channel
    await channel.stop()
    assert channel.running is None


def test_a_channel_route_without_a_declared_limit_is_refused(monkeypatch):
    """A route the front door has no row for would be taken for the API's: refused at build."""
    unlimited = channel_registry.Kind("none", memo)
    monkeypatch.setitem(channel_registry.CHANNELS, "memo", unlimited)
    world = Parts()
    parts = channel_registry.Parts(
        Settings(_env_file=None), ThreadService(world.store, world.policy, None, world.clock), MemoryInbox(),
        None, None, world.policy,  # type: ignore[arg-type]
    )
    with pytest.raises(ValueError, match="/memo/say without a body limit"):
        channel_registry.make_channels(parts)


# --- a new deployer: "recording" ------------------------------------------------------------


class RecordingRunner:
    """Runs a deploy by keeping its request (a real one would ask Argo CD or Kubernetes)."""

    resumable = False

    def __init__(self) -> None:
        self.requests: list[DeployRequest] = []

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        self.requests.append(request)
        return DeployOutcome(ok=True, exit_code=0, output=f"recorded {request.tag} for {request.environment}")


VERSIONS = MemoryDeployer(TAGS)  # the versions it reuses (in a real one: GitVersions(service.repo))
RUNNERS: list[RecordingRunner] = []


def recording(settings: Settings, service: ServiceSettings) -> Deployer:
    """The builder: the versions from where they already come, its own runner."""
    runner = RecordingRunner()
    RUNNERS.append(runner)
    return Pair(VERSIONS, runner)


async def test_a_new_deployer_is_built_by_kind_and_deploys_the_resolved_commit(monkeypatch, tmp_path: Path):
    monkeypatch.setitem(deployer_registry.DEPLOYERS, "recording", recording)  # the one line of registration
    toml = tmp_path / "deploybot.toml"
    toml.write_text('[services.api]\ndeployer = "recording"\n\n[services.web]\n')
    settings = Settings(_env_file=None, deploybot_config=toml, approvers="*")
    assert deployer_registry.problems(settings) == []
    deployers = deployer_registry.make_deployers(settings)
    assert isinstance(deployers["api"], Pair) and not isinstance(deployers["web"].runner, RecordingRunner)

    world = Parts(policy=settings.policy(KINDS))
    runner = make_runner(world)
    runner.deploying.deployers = deployers
    service = ThreadService(world.store, world.policy, None, world.clock)
    thread = await service.launch("deploy api v1.2.2 to staging", Identity("alice", "cli", "alice"))
    done = await runner.run(thread.id)

    result = next(e for e in done.events if isinstance(e, DeployResult))
    assert result.ok and result.output == "recorded v1.2.2 for staging"
    [request] = RUNNERS[-1].requests
    assert (request.service, request.tag, request.commit) == ("api", "v1.2.2", TAGS["v1.2.2"])


def test_a_deployer_kind_nobody_registered_is_refused_at_start(tmp_path: Path):
    toml = tmp_path / "deploybot.toml"
    toml.write_text('[services.api]\ndeployer = "argo"\n')
    settings = Settings(_env_file=None, deploybot_config=toml, approvers="*")
    assert deployer_registry.problems(settings) == ["api: deployer 'argo' is not one of command, github"]
    with pytest.raises(ValueError, match="argo"):
        deployer_registry.make_deployers(settings)


# --- docs/extending.md shows this file and the real ones, as they are -----------------------

DOC = ROOT / "docs" / "extending.md"
SOURCES = [Path(__file__)] + [ROOT / "bot" / "wiring" / name for name in ("channels.py", "deployers.py")] + [
    ROOT / "tests" / "chat_channel" / "__init__.py",  # the chat channel, and its test
    ROOT / "tests" / "wiring" / "test_chat_channel.py",
]


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOC.read_text(), re.S | re.M)


def test_every_code_block_of_the_doc_is_real_code():
    code = "\n".join(source.read_text() for source in SOURCES)
    assert len(blocks("python")) >= 6
    for block in blocks("python"):
        assert block in code, block


def test_the_docs_deploybot_toml_starts_with_the_kind_registered(monkeypatch, tmp_path: Path):
    monkeypatch.setitem(deployer_registry.DEPLOYERS, "recording", recording)
    [toml] = blocks("toml")
    (tmp_path / "deploybot.toml").write_text(toml)
    settings = Settings(_env_file=None, deploybot_config=tmp_path / "deploybot.toml", approvers="*")
    assert deployer_registry.problems(settings) == [] and settings.services()[0].deployer == "recording"
