"""The channels, by kind: how each is built from the settings and plugged in.

A channel (ports.Channel) answers on its HTTP routes, tells its people through its notifier,
and starts and stops with the process. Each kind of CHANNELS says how it proves who is
speaking (one line, for the docs), the body limits of its paths (the front door takes them
whether the channel is on or not, so its paths never ask for the API's credentials), and
builds the channel from the settings: None when it is off. The order of CHANNELS is the
order notifiers hear each event in.

A new channel is a package in bot/adapters/channels, a builder here and one line in CHANNELS,
and its settings (docs/extending.md). MCP and the GitHub gate are kinds like the rest: MCP
serves its own ASGI app in front of the web app (Plugged.around), the gate stands in front of
each service's deployer (Plugged.fronts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp

from bot.adapters.channels.log import LogNotifier
from bot.adapters.http.limits import API_MAX_BYTES, GITHUB_MAX_BYTES, SLACK_MAX_BYTES, Access, Limit
from bot.adapters.redis.credentials import RedisCredentials
from bot.adapters.redis.inbox import RedisInbox
from bot.config.settings import ConfigError, Settings
from bot.core.people import Normalise
from bot.core.policy import Policy
from bot.core.triggers import NotifyTarget, target_problem
from bot.runtime.ports import Channel, Deployer, History, Notifier, Outbox, Route
from bot.runtime.service import ThreadService
from bot.wiring.sign_in import sign_in_linker

Kick = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class Parts:
    """What a channel is built from."""

    settings: Settings
    service: ThreadService  # records what people say, and a delivery that keeps failing
    inbox: RedisInbox
    kick: Kick  # hands a thread to a worker
    credentials: RedisCredentials
    policy: Policy
    printer: Notifier | None = None  # what this process shows events with instead of the log (the CLI)
    history: History | None = None  # the deploy history agents read (MCP); without it, no MCP
    # Each service's deployer, shared with the deploy path: a channel may stand in front of each
    # (Plugged.fronts: the GitHub gate's gated deployments run through it).
    deployers: dict[str, Deployer] = field(default_factory=dict)
    built: dict[str, Channel] = field(default_factory=dict)  # the channels built so far, by kind
    outbox: Outbox | None = None  # messages that must go out, kept until sent (email's approval mails)


@dataclass(frozen=True)
class Plugged:
    """A channel switched on (ports.Channel), around the adapter object that does the work."""

    adapter: Any  # EmailChannel, SlackChannel, ...: what the sign-in mailer and tests reach
    served: tuple[Route, ...] = ()
    notifies: Notifier | None = None
    starting: Callable[[bool], Awaitable[None]] | None = None
    stopping: Callable[[], Awaitable[None]] | None = None
    fronts: Callable[[str, Deployer], Deployer] | None = None  # stands in front of a service's deployer
    around: Callable[[ASGIApp], ASGIApp] | None = None  # serves its own ASGI app in front of the web app

    def routes(self) -> Sequence[Route]:
        return self.served

    def notifier(self) -> Notifier | None:
        return self.notifies

    async def start(self, receive: bool) -> None:
        if self.starting is not None:
            await self.starting(receive)

    async def stop(self) -> None:
        if self.stopping is not None:
            await self.stopping()


@dataclass(frozen=True)
class Kind:
    """One entry of CHANNELS: what is known of a channel whether it is on or not, and how to
    build it."""

    proof: str  # how the channel knows who is speaking, in one line
    build: Callable[[Parts], Channel | None]  # None: off in these settings
    limits: Callable[[Settings], Sequence[tuple[str, int]]] = lambda settings: ()  # (path, max bytes)
    # What the front door asks on its paths: "none" (the channel proves who is speaking itself)
    # or "required" (the front door's credentials: an agent's token for MCP).
    access: Access = "none"
    # Its events store the channel's own id of the speaker as `user` (Slack's and email's
    # always did): changing it would change what is stored.
    raw_user: bool = False
    # Its kind of people's ids (`slack = …` under [people.NAME]) and how they compare, from its
    # package: imported only when asked (a channel's SDK is not loaded for the registry).
    ids: Callable[[], tuple[str, Normalise]] | None = None
    # Its notify targets (`slack:CHANNEL_ID` in a notify list): their kind and which values are
    # its own, from its package, imported only when asked.
    targets: Callable[[], tuple[str, NotifyTarget]] | None = None


# --- the channels ------------------------------------------------------------------------------


def log(parts: Parts) -> Channel:
    """Every event in the log (or, for the CLI, on the terminal): always on."""
    printer = parts.printer or LogNotifier(parts.settings.secrets())
    return Plugged(printer, notifies=printer)


def slack(parts: Parts) -> Channel | None:
    settings = parts.settings.slack
    if settings is None:
        return None
    from bot.adapters.channels import slack

    web = slack.client(settings.bot_token.get_secret_value(), settings.api_url)
    app_token = settings.app_token.get_secret_value() if settings.app_token else None
    channel = slack.build(
        settings.signing_secret.get_secret_value(), web, parts.service, parts.inbox, parts.kick, app_token,
        sign_in_link=sign_in_linker(parts.settings, parts.credentials),
    )
    # In Socket Mode Slack comes over a connection of the bot's own: no HTTP endpoint then.
    routes = () if app_token else (Route("/slack/events", channel.endpoint),)
    return Plugged(channel, routes, slack.SlackNotifier(web, parts.inbox, parts.policy), channel.start, channel.stop)


def outgoing_webhooks(parts: Parts) -> Channel | None:
    hooks = parts.settings.notify_webhook
    if hooks is None:
        return None
    from bot.adapters.channels.outgoing_webhooks import WebhookNotifier

    # A delivery that keeps failing is recorded in its thread, through the service.
    webhooks = WebhookNotifier(
        hooks.urls, hooks.secret.get_secret_value(), parts.service.record, secrets=parts.settings.secrets()
    )
    return Plugged(webhooks, notifies=webhooks, stopping=webhooks.aclose)


def on_github(settings: Settings) -> dict[str, str]:
    """service -> "owner/name" for the services whose repository is on GitHub."""
    legacy = settings.github.repository if settings.github else None  # DEPLOYER=github without a catalog
    return {
        s.name: repo for s in settings.services() if (repo := s.github or (legacy if s.deployer == "github" else None))
    }


def github_deployments(parts: Parts) -> Channel | None:
    settings, repositories = parts.settings, on_github(parts.settings)
    if not repositories or settings.github_token is None:
        return None
    from bot.adapters.channels.github.deployments import GitHubDeployments

    # Like the webhooks: a status that keeps failing is recorded through the service.
    deployments = GitHubDeployments(
        settings.github_token.get_secret_value(), repositories, parts.service.record, parts.inbox,
        api_url=settings.github_api_url, public_url=settings.public_url,
    )
    return Plugged(deployments, notifies=deployments, stopping=deployments.aclose)


def email(parts: Parts) -> Channel | None:
    settings = parts.settings.email
    if settings is None:
        return None
    from bot.adapters.channels.email import EmailChannel, Smtp

    password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
    channel = EmailChannel(
        service=parts.service,
        inbox=parts.inbox,
        kick=parts.kick,
        smtp=Smtp(settings.smtp_host, settings.smtp_port, settings.smtp_username, password, settings.smtp_tls),
        sender=settings.sender,
        inbound_secret=settings.inbound_secret.get_secret_value(),
        reply_secret=settings.reply_secret.get_secret_value(),
        allowed=settings.allowed_senders,
        policy=parts.policy,  # who may approve: the same rules the service decides by
        max_bytes=settings.max_bytes,
        trusted_authserv_ids=settings.trusted_authserv_ids,
        mailbox_authenticated_domains=settings.mailbox_authenticated_domains,
        public_url=parts.settings.public_url,
        outbox=parts.outbox,
    )
    # It hears every event too (to mail approvers); starting sends what the outbox holds;
    # stopping lets the mails being sent go out.
    return Plugged(channel, (Route("/email/inbound", channel.endpoint),), channel, starting=channel.start,
                   stopping=channel.drain)


def github_webhook(parts: Parts) -> Channel | None:
    secret = parts.settings.github_webhook_secret
    if secret is None:
        return None
    from bot.adapters.channels.github import GitHubGate, GitHubWebhook

    gate = getattr(parts.built.get("github_gate"), "adapter", None)  # deployment_protection_rule deliveries
    hook = GitHubWebhook(secret.get_secret_value(), parts.settings.triggers(), parts.service, parts.inbox, parts.kick,
                         gate=gate if isinstance(gate, GitHubGate) else None)
    return Plugged(hook, (Route("/github/webhook", hook.endpoint),))


def github_gate(parts: Parts) -> Channel | None:
    """deploybot as a GitHub App, the gate of GitHub environments; off without GITHUB_APP_ID.
    It stands in front of each service's deployer (its `approved` is the deploy itself:
    GateDeployer) and answers `rejected` when a gated deployment's thread ends without
    deploying; its deliveries come through /github/webhook."""
    settings, app = parts.settings, parts.settings.github_app
    if app is None:
        return None
    from bot.adapters.channels.github import GitHubGate
    from bot.adapters.github_api import AppAuth

    auth = AppAuth(app.app_id, app.private_key.get_secret_value(), app.api_url)
    gate = GitHubGate(auth, app.rules, on_github(settings), parts.service, parts.inbox, parts.kick,
                      public_url=settings.public_url, poll_seconds=settings.github_poll_seconds,
                      follow_seconds=settings.github_gate_follow_seconds)
    return Plugged(gate, notifies=gate, stopping=gate.aclose, fronts=gate.wrap)


def mcp(parts: Parts) -> Channel | None:
    """AI agents over MCP at /mcp, in front of the web app: always on where the deploy history
    is handed in. The MCP SDK is imported only when the web app is made."""
    history = parts.history
    if history is None:
        return None

    def around(web: ASGIApp) -> ASGIApp:
        from bot.adapters.channels.mcp import Tools, WithMcp, server

        tools = Tools(parts.service, history, parts.deployers, parts.kick, parts.settings.secrets())
        return WithMcp(web, server(tools))

    return Plugged(parts.service, around=around)


def _slack_ids() -> tuple[str, Normalise]:
    from bot.adapters.channels.slack import KIND, normalise_user

    return KIND, normalise_user


def _slack_targets() -> tuple[str, NotifyTarget]:
    from bot.adapters.channels.slack import KIND, TARGET

    return KIND, TARGET


def _email_targets() -> tuple[str, NotifyTarget]:
    from bot.adapters.channels.email import KIND, TARGET

    return KIND, TARGET


def _email_ids() -> tuple[str, Normalise]:
    from bot.adapters.channels.email import KIND, normalise_address

    return KIND, normalise_address


def _github_ids() -> tuple[str, Normalise]:
    from bot.adapters.channels.github import KIND, normalise_login

    return KIND, normalise_login


def _email_limits(settings: Settings) -> Sequence[tuple[str, int]]:
    email = settings.email
    return (("/email/inbound", email.max_bytes if email else API_MAX_BYTES),)


CHANNELS: dict[str, Kind] = {
    "log": Kind("none: it only tells (the log, or the terminal)", log),
    "slack": Kind("Slack's request signature (SLACK_SIGNING_SECRET), or Socket Mode's own connection", slack,
                  lambda settings: (("/slack/events", SLACK_MAX_BYTES),), raw_user=True, ids=_slack_ids,
                  targets=_slack_targets),
    "outgoing_webhooks": Kind("none: it only tells (signed with NOTIFY_WEBHOOK_SECRET)", outgoing_webhooks),
    "github_deployments": Kind("none: it only tells (GitHub Deployments, with GITHUB_TOKEN)", github_deployments),
    "email": Kind("the inbound secret, then the sender: the receiving server's Authentication-Results verdict "
                  "for a mailbox-authenticated domain, a reply token, or a confirmation round trip", email,
                  _email_limits, raw_user=True, ids=_email_ids, targets=_email_targets),
    # Before the webhook, which hands it the deliveries; the last to hear events, as before.
    "github_gate": Kind("GitHub's signature on its deployment_protection_rule deliveries (through /github/webhook); "
                        "the creator is GitHub's word about its own user", github_gate, ids=_github_ids),
    "github_webhook": Kind("GitHub's signature (X-Hub-Signature-256, GITHUB_WEBHOOK_SECRET)", github_webhook,
                           lambda settings: (("/github/webhook", GITHUB_MAX_BYTES),)),
    "mcp": Kind("an agent's token, which the front door resolves before a byte of the body is read "
                "(anyone else is refused at /mcp); agents never approve", mcp,
                lambda settings: (("/mcp", API_MAX_BYTES),), access="required"),
}


def raw_users() -> frozenset[str]:
    """The kinds whose events store the channel's own id of the speaker as `user` (the
    service is told them: ThreadService.raw_users)."""
    return frozenset(name for name, kind in CHANNELS.items() if kind.raw_user)


def people_kinds(channels: Mapping[str, Kind] | None = None) -> dict[str, Normalise]:
    """Each registered channel's kind of people's ids and how they compare: what the
    directory is told (`settings.policy(people_kinds())`)."""
    return dict(kind.ids() for kind in (CHANNELS if channels is None else channels).values() if kind.ids)


def notify_targets(channels: Mapping[str, Kind] | None = None) -> dict[str, NotifyTarget]:
    """Each registered channel's notify targets, by kind (what notify lists are checked by)."""
    return dict(kind.targets() for kind in (CHANNELS if channels is None else channels).values() if kind.targets)


def problems(settings: Settings, channels: Mapping[str, Kind] | None = None) -> list[str]:
    """What the registered channels find wrong in deploybot.toml, one line each (refused at
    start): a kind of people's ids that is no channel's, a notify target that is no channel's,
    or a value its channel does not take."""
    try:  # a key of [people.NAME] that is no registered channel's kind of ids
        settings.policy(people_kinds(channels))
    except ValueError as e:
        return str(e).splitlines()
    kinds = notify_targets(channels)
    lists = [
        *((f"triggers[{i}].notify", t.notify) for i, t in enumerate(settings.triggers())),
        *((f"schedules[{i}].notify", s.notify) for i, s in enumerate(settings.schedules())),
        *((f"github_environments[{i}].notify", r.notify) for i, r in enumerate(settings.gate_rules())),
        *((f"agents.{a.name}.notify", a.notify) for a in settings.directory().agents.values()),
    ]
    return [f"{where}: {why}" for where, notify in lists for target in notify
            if (why := target_problem(target, kinds))]


def make_channels(parts: Parts) -> dict[str, Channel]:
    """The channels these settings switch on, by kind, in the order of CHANNELS. Each route a
    channel serves must have its kind's body limit, or it would be taken for the API's."""
    if wrong := problems(parts.settings):
        raise ConfigError("\n".join(wrong))
    channels: dict[str, Channel] = {}
    for name, kind in CHANNELS.items():
        channel = kind.build(parts)
        if channel is None:
            continue
        limited = {path for path, _ in kind.limits(parts.settings)}
        for route in channel.routes():
            if route.path not in limited:
                raise ValueError(f"channel {name} serves {route.path} without a body limit for it (Kind.limits)")
        if isinstance(channel, Plugged) and channel.fronts is not None:
            fronts = channel.fronts
            parts.deployers.update({service: fronts(service, d) for service, d in parts.deployers.items()})
        channels[name] = parts.built[name] = channel
    return channels


def around(channels: Sequence[Channel], web: ASGIApp) -> ASGIApp:
    """`web` behind the ASGI apps the channels serve in front of it (MCP at /mcp)."""
    for channel in channels:
        if isinstance(channel, Plugged) and channel.around is not None:
            web = channel.around(web)
    return web


def body_limits(settings: Settings) -> list[Limit]:
    """The front door's rows for every registered channel's paths, on or off."""
    return [Limit(path, max_bytes, auth=kind.access)
            for kind in CHANNELS.values() for path, max_bytes in kind.limits(settings)]
