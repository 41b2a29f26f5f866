"""python -m bot serve | worker | mcp | chat MESSAGE | threads ... | lock | unlock | rollback | promote | deploys |
tokens ... | login-link PERSON | gc | redis-stop"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import signal
import sys
from typing import TypeAlias

from pydantic import ValidationError

from bot.adapters.redis import embedded as embedded_redis
from bot.config.settings import Settings, config_problems
from bot.core import commands, wording
from bot.core.tokens import PERSONAL_TOKEN_PREFIX
from bot.runtime.service import Refused
from bot.wiring import children


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bot", description="deploybot")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API (and the agent loop) on PORT")
    serve.add_argument(
        "--no-worker", action="store_true",
        help="only record events and hand threads over: `python -m bot worker` runs them",
    )
    sub.add_parser("worker", help="run threads handed over by `serve` (any number of these)")
    sub.add_parser("mcp", help="for an agent's MCP client: stdin/stdout bridged to the server's /mcp "
                   "(DEPLOYBOT_URL) as the agent whose token is DEPLOYBOT_TOKEN; never with the store's credentials")
    chat = sub.add_parser("chat", help="talk to the bot in this terminal")
    chat.add_argument("message")
    chat.add_argument("--user", default=_me())
    chat.add_argument("--idempotency-key", metavar="KEY",
                      help="run again with the same KEY (a retry), go on with the thread it started")
    _threads(sub)
    _locks(sub)
    _freezes(sub)
    rollback = sub.add_parser("rollback", help="put back what was deployed before (asks for approval where needed)")
    rollback.add_argument("service")
    rollback.add_argument("environment")
    rollback.add_argument("--user", default=_me())
    promote = sub.add_parser(
        "promote",
        help="deploy the newest commit that passed the environment before ENV (asks for approval where needed)",
    )
    promote.add_argument("service")
    promote.add_argument("environment")
    promote.add_argument("--user", default=_me())
    deploys = sub.add_parser("deploys", help="what is on an environment")
    deploys.add_argument("environment")
    _credentials_commands(sub)
    gc = sub.add_parser("gc", help="retention: remove threads finished longer than THREAD_RETENTION, and the rest "
                        "(docs/operations.md#retention); workers do it continuously")
    gc.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    gc.add_argument("--limit", type=int, default=1000, help="threads (and records) per pass (default 1000)")
    gc.add_argument("--reindex", action="store_true",
                    help="first index every stored thread (once, after upgrading from a version without the index)")
    sub.add_parser("redis-stop", help="stop the embedded Redis server")
    return p


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # what add_subparsers gives


def _threads(sub: Commands) -> None:
    threads = sub.add_parser("threads", help="inspect and answer threads").add_subparsers(
        dest="action", required=True
    )
    ls = threads.add_parser("list")
    ls.add_argument("--status")
    ls.add_argument("--limit", type=int, default=20)
    show = threads.add_parser("show")
    show.add_argument("id")
    show.add_argument("--markdown", action="store_true")
    respond = threads.add_parser("respond", help="answer a thread, or decide on its approval")
    respond.add_argument("id")
    respond.add_argument("text", nargs="?", default="")
    decision = respond.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true")
    decision.add_argument("--reject", action="store_true")
    respond.add_argument("--approval-id")
    respond.add_argument("--user", default=_me())
    fork = threads.add_parser("fork")
    fork.add_argument("id")
    fork.add_argument("--at", type=int, required=True)
    fork.add_argument("--user", default=_me())
    cancel = threads.add_parser("cancel")
    cancel.add_argument("id")
    cancel.add_argument("--reason", default="")
    cancel.add_argument("--user", default=_me())
    threads.add_parser("resume", help="run a thread's loop in this process").add_argument("id")


def _locks(sub: Commands) -> None:
    lock = sub.add_parser("lock", help="lock an environment (or one service there): no deploy to it starts")
    lock.add_argument("environment")
    lock.add_argument("--service", help="only this service")
    lock.add_argument("--reason", required=True)
    lock.add_argument("--user", default=_me())
    unlock = sub.add_parser("unlock", help="lift a lock (whoever set it, or an approver)")
    unlock.add_argument("environment")
    unlock.add_argument("--service", help="the lock on this service")
    unlock.add_argument("--force", metavar="REASON", help="take someone else's lock (they are told why)")
    unlock.add_argument("--user", default=_me())


def _freezes(sub: Commands) -> None:
    freeze = sub.add_parser("freeze", help="stop the line: no deploy to ENV (or --all) starts until unfrozen")
    where = freeze.add_mutually_exclusive_group(required=True)
    where.add_argument("environment", nargs="?")
    where.add_argument("--all", action="store_true", help="every environment")
    freeze.add_argument("--reason", required=True)
    freeze.add_argument("--until", help="when it ends by itself: 2026-11-26 or 2026-11-26T08:00 (UTC)")
    freeze.add_argument("--user", default=_me())
    unfreeze = sub.add_parser("unfreeze", help="lift a freeze set with `freeze`")
    where = unfreeze.add_mutually_exclusive_group(required=True)
    where.add_argument("environment", nargs="?")
    where.add_argument("--all", action="store_true")
    unfreeze.add_argument("--user", default=_me())


def _credentials_commands(sub: Commands) -> None:
    said = f"personal API tokens (Authorization: Bearer {PERSONAL_TOKEN_PREFIX}...)"
    tokens = sub.add_parser("tokens", help=said).add_subparsers(dest="action", required=True)
    create = tokens.add_parser("create", help="a new token for a person of deploybot.toml, printed once")
    create.add_argument("person", nargs="?")
    create.add_argument("--agent", help="a token for this agent of deploybot.toml's [agents] instead of a person")
    create.add_argument("--name", default="api", help="what the token is for (laptop, ci, ...)")
    tokens.add_parser("list", help="every token: id, person, name, created, last used").add_argument("--person")
    tokens.add_parser("revoke", help="a token stops working at once").add_argument("id")
    sub.add_parser(
        "login-link", help="a one-time link that signs PERSON in to the web API (10 minutes)"
    ).add_argument("person")


def _me() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in a bare container
        return "cli"


def configure_logging(settings: Settings) -> logging.Filter:
    """LOG_LEVEL and the format, and the one filter that keeps every secret out of every
    log line, a library's too (docs/security.md#limits-and-hostile-input)."""
    from bot.adapters.http.logs import redact_logs

    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return redact_logs(settings.secrets())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "mcp":  # the agent's side: none of the team's settings are read
        return bridge()
    settings = read_settings()
    if settings is None:
        return 2
    redacting = configure_logging(settings)
    loop = children.fast_event_loops()  # before any event loop starts, or a git or deploy command
    if args.command in ("serve", "worker") and (problem := children.run(store_problem(settings))):
        print(f"configuration error: {problem}", file=sys.stderr)
        return 2
    if args.command == "serve":
        if not settings.api_token and (settings.slack or settings.email):
            print(
                "configuration error: set API_TOKEN. With Slack or email on, the server must be "
                "reachable from outside, and /threads can approve deploys.", file=sys.stderr,
            )
            return 2
        return serve(settings, worker=not args.no_worker, redacting=redacting, loop=loop)
    if args.command == "worker":
        return children.run(_work(settings))
    if args.command == "redis-stop":
        print("stopped" if embedded_redis.stop(settings.data_dir) else "not running")
        return 0
    if args.command in ("tokens", "login-link"):
        return children.run(_credentials(settings, args))
    if args.command == "gc":
        return children.run(_gc(settings, args))
    return children.run(terminal(settings, args))


def bridge() -> int:
    """`python -m bot mcp`: stdout is the protocol's, so whatever it says goes to stderr, in
    one line. It refuses to run beside the store's credentials (docs/security.md)."""
    from bot.adapters.channels.mcp import bridge as mcp_bridge
    from bot.adapters.http.logs import redact_logs
    from bot.config.settings import BridgeSettings

    given = BridgeSettings.read()
    if (problem := given.problem()) is not None:
        print(f"refused: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redact_logs((given.token,))
    try:
        return children.run(mcp_bridge.run(given.url, given.token))
    except mcp_bridge.Refused as e:
        print(f"refused: {e.message}" if e.code == 2 else e.message, file=sys.stderr)
        return e.code


def read_settings() -> Settings | None:
    """The settings, or None after printing every configuration problem, one line each."""
    try:
        settings = Settings()  # refuses half a configuration (LLM, Slack, email, GitHub) with the reason
    except ValidationError as e:
        problems = config_problems(e)
    except ValueError as e:  # pydantic-settings' own errors (SettingsError), e.g. an unreadable .env
        problems = [str(e)]
    else:
        # A service's deployer must be a registered kind (bot/wiring/deployers.py).
        # A notify target must be one of a registered channel's (bot/wiring/channels.py).
        from bot.wiring.channels import problems as wrong_targets
        from bot.wiring.deployers import problems as unknown_deployers

        problems = unknown_deployers(settings) + wrong_targets(settings)
    for problem in problems:
        print(f"configuration error: {problem}", file=sys.stderr)
    return None if problems else settings


async def terminal(settings: Settings, args: argparse.Namespace) -> int:
    """A terminal command (chat, threads, lock, freeze, ...) in this process: what it prints,
    a refusal on stderr, and its exit code. `main` runs it on an event loop of its own; a
    test awaits it on the test's."""
    from bot.adapters.channels import cli
    from bot.wiring.app import build

    logging.getLogger("deploybot.thread").setLevel(logging.WARNING)  # the CLI prints events itself
    app = build(settings, notifier=cli.PrintNotifier())
    term = cli.Terminal(app.service, app.runner.run, settings.secrets(), settings.store_named())
    try:
        if args.command == "chat":
            return await cli.chat(term, args.message, args.user, args.idempotency_key)
        if args.command in ("freeze", "unfreeze"):
            scope = commands.ALL_ENVIRONMENTS if args.all else args.environment
            text = (commands.stop_text(scope, args.reason, getattr(args, "until", None) or "")
                    if args.command == "freeze" else commands.resume_text(scope))
            return await cli.chat(term, text, args.user)
        if args.command in ("lock", "unlock", "deploys", "rollback", "promote"):
            # The same exact commands as in chat, so each change is recorded in a thread.
            service = getattr(args, "service", None)
            where = wording.lock_target(args.environment, service or "")
            text = {
                "lock": f"lock {where}: {getattr(args, 'reason', '')}",
                "unlock": f"unlock {where}" + (f" --force: {args.force}" if getattr(args, "force", None) else ""),
                "deploys": f"what's on {args.environment}?",
                "rollback": commands.rollback_text(str(service), args.environment),
                "promote": commands.promote_text(str(service), args.environment),
            }[args.command]
            return await cli.chat(term, text, getattr(args, "user", _me()))
        return await cli.threads(term, args)
    except Refused as e:
        print(f"refused: {cli.safe(e.message)}", file=sys.stderr)
        return 1
    finally:
        await app.close()


async def _credentials(settings: Settings, args: argparse.Namespace) -> int:
    """tokens create | list | revoke, login-link: straight to Redis, nothing else built."""
    from bot.adapters.redis.credentials import RedisCredentials
    from bot.wiring.app import redis_client, sign_in_linker

    person = getattr(args, "person", None)
    agent = getattr(args, "agent", None)
    if agent is not None or (getattr(args, "action", "") == "create" and person is None):
        return await _agent_token(settings, person, agent)
    if args.command == "login-link" or getattr(args, "action", "") == "create":
        people = settings.directory().people
        if person not in people:
            known = ", ".join(sorted(people)) or "nobody: there is no deploybot.toml, or it names no people"
            print(f"refused: {person!r} is not a person in deploybot.toml (people: {known})", file=sys.stderr)
            return 2
    redis = redis_client(settings)
    credentials = RedisCredentials(redis)
    try:
        if args.command == "login-link":
            print(await sign_in_linker(settings, credentials)(args.person))
            print(f"a sign-in link for {person}: it works once, for 10 minutes", file=sys.stderr)
        elif args.action == "create":
            token_id, token = await credentials.create(args.person, args.name)
            print(token)
            print(f"token {token_id} for {person} ({args.name}): shown this once, keep it secret; "
                  f"send it as Authorization: Bearer <token>", file=sys.stderr)
        elif args.action == "list":
            found = await credentials.list(person)
            for t in found:
                used = t.last_used.isoformat(timespec="seconds") if t.last_used else "never"
                print(f"{t.token_id}  {t.person}  {t.name}  created {t.created.isoformat(timespec='seconds')}  "
                      f"last used {used}")
            if not found:
                print("no tokens", file=sys.stderr)
        elif args.action == "revoke":
            if not await credentials.revoke(args.id):
                print(f"no token {args.id}", file=sys.stderr)
                return 1
            print(f"revoked {args.id}")
    finally:
        await redis.aclose()
    return 0


async def _agent_token(settings: Settings, person: str | None, agent: str | None) -> int:
    """`tokens create --agent NAME`: the token is held by the agent's principal (agent:NAME)."""
    from bot.core.people import AGENT

    agents = settings.directory().agents
    if person is not None or agent is None:
        print("refused: name a person or --agent NAME, not both (nor neither)", file=sys.stderr)
        return 2
    if agent not in agents:
        known = ", ".join(sorted(agents)) or "none: deploybot.toml has no [agents.NAME]"
        print(f"refused: {agent!r} is not an agent in deploybot.toml (agents: {known})", file=sys.stderr)
        return 2
    return await _create_token(settings, f"{AGENT}:{agent}", "mcp")


async def _create_token(settings: Settings, holder: str, name: str) -> int:
    from bot.adapters.redis.credentials import RedisCredentials
    from bot.wiring.app import redis_client

    redis = redis_client(settings)
    try:
        token_id, token = await RedisCredentials(redis).create(holder, name)
    finally:
        await redis.aclose()
    print(token)
    print(f"token {token_id} for {holder} ({name}): shown this once, keep it secret; give it to the agent as "
          "DEPLOYBOT_TOKEN (stdio) or Authorization: Bearer <token> (HTTP, /mcp)", file=sys.stderr)
    return 0


async def _gc(settings: Settings, args: argparse.Namespace) -> int:
    """One retention pass (bot/runtime/gc.py); without --dry-run, passes until nothing is left."""
    from dataclasses import replace

    from bot.wiring.app import build

    app = build(settings)
    assert app.collector is not None
    collector = replace(app.collector, batch=max(1, args.limit))
    try:
        if args.reindex and not args.dry_run:
            print(f"indexed {await collector.reindex()} thread(s)")
        while True:
            report = await collector.collect(dry_run=args.dry_run)
            for line in report.lines(args.dry_run):
                print(line)
            if args.dry_run or not report.more:
                return 0
    finally:
        await app.close()


async def store_problem(settings: Settings) -> str | None:
    """Why the store must not be used (it may evict keys), or None; a store that does not
    answer now is the run's to wait for (the web answers 503 meanwhile), and one that will not
    say its policy is warned about."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from bot.adapters.redis import eviction
    from bot.wiring.app import redis_client

    redis = redis_client(settings, max_connections=2)
    try:
        problem, warning = await eviction.problem(redis)
    except (RedisConnectionError, RedisTimeoutError, OSError) as e:
        logging.getLogger("deploybot").warning("Redis did not answer at start (%s): its policy is not checked", e)
        return None
    finally:
        await redis.aclose()
    if warning:
        logging.getLogger("deploybot").warning("%s", warning)
    return problem


async def _work(settings: Settings) -> int:
    from bot.wiring.app import build

    app = build(settings)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await app.start(worker=True, receive=False)
    log = logging.getLogger("deploybot.worker")
    log.info("worker %s: taking work (%d runs at once)", app.worker.name, settings.worker_concurrency)
    await stopping.wait()
    log.info("worker %s: stopping; runs in progress get %.0f s to finish", app.worker.name, settings.worker_grace)
    await app.close()
    log.info("worker %s: stopped", app.worker.name)
    return 0


def serve(settings: Settings, worker: bool = True, redacting: logging.Filter | None = None,
          loop: str = "asyncio") -> int:
    import uvicorn

    from bot.adapters.http.logs import uvicorn_log_config
    from bot.wiring.app import build, http_app, redis_connections

    host = settings.bind_host()
    if not settings.api_token:
        logging.getLogger("deploybot").warning(
            "API_TOKEN is not set: serving on 127.0.0.1 only, so the approval API is not "
            "reachable from other machines. Set API_TOKEN to serve on %s.", settings.host
        )
    if settings.api_token and settings.session_secret is None:
        logging.getLogger("deploybot").info(
            "SESSION_SECRET is not set: sign-in sessions are signed with a secret kept in %s; set "
            "SESSION_SECRET when more than one server answers at one address", settings.data_dir / "session_secret",
        )
    # uvicorn's loggers print through handlers of their own: the same redaction goes on them.
    uvicorn.run(
        http_app(build(settings, connections=redis_connections(settings, web=True, worker=worker)), worker=worker),
        host=host, port=settings.port, log_level=settings.log_level.lower(), loop=loop,
        log_config=uvicorn_log_config(redacting),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
