"""The default deployer: tags from a local git repository, deploys by running a command.

The command is an argv template run without a shell, so a tag can never become shell code.
Its environment is built from an allow-list, never copied from the bot's (which holds
REDIS_URL, tokens and keys): PATH, HOME, the locale and the like, what identifies the deploy
(DEPLOY_ID, DEPLOY_SERVICE, ...), and the variables DEPLOY_ENV_PASSTHROUGH names.
"""

from __future__ import annotations

import asyncio
import os
import signal
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from bot.adapters.deployers import commit_times, git_refs, output
from bot.adapters.deployers.pair import Pair
from bot.adapters.deployers.tag_order import newest_first
from bot.core import wording
from bot.core.deploy_command import DRY_RUN, command_argv
from bot.core.events import CommitSummary, GitTag
from bot.core.transcript import one_line
from bot.runtime.ports import Check, Comparison, DeployerError, DeployOutcome, DeployRequest, LiveOutput

OUTPUT_LINES = 20
_FIELDS = "%(refname:short)%09%(objectname)%09%(*objectname)%09%(creatordate:iso-strict)"
# One commit a line: sha, author, subject, each ended by NUL (which neither can hold).
_LOG_FIELDS = "%H%x00%an%x00%s%x00"
SUBJECT_CHARS = 200  # a commit subject shown in a change preview, at most
AUTHOR_CHARS = 80
# What any program needs to run as the bot's user; nothing here holds a secret.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")


class GitVersions:
    """Tags, commits and change previews from a local git repository (which has no CI to ask).

    The tags are listed once per change of the repository's refs (git_refs.signature), not
    once per run: a `git` process per run was a quarter of a worker's CPU."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._common_dir: Path | None = None
        self._tags: tuple[git_refs.Signature, list[GitTag]] | None = None
        self.listed = 0  # times git was asked for the tags (the cache's tests count them)

    async def list_tags(self) -> list[GitTag]:
        seen = git_refs.signature(await self._git_dir())
        if seen is not None and self._tags is not None and self._tags[0] == seen:
            return list(self._tags[1])
        out = await self._git("for-each-ref", "--sort=-creatordate", f"--format={_FIELDS}", "refs/tags")
        self.listed += 1
        tags = []
        for line in out.splitlines():
            name, obj, peeled, date = (line.split("\t") + ["", "", ""])[:4]
            tags.append(GitTag(name=name, commit=peeled or obj, date=date))
        # Kept only with a signature taken before listing: a tag made while git listed
        # changes the signature, so it is listed again next time.
        tags = newest_first(tags)  # git orders tags made in one second by name: v1.9.0 above v1.10.0
        self._tags = (seen, tags) if seen is not None else None
        return list(tags)

    async def _git_dir(self) -> Path:
        """The repository's common git directory (where refs live, also for a worktree), asked once."""
        if self._common_dir is None:
            out = await self._git("rev-parse", "--path-format=absolute", "--git-common-dir")
            self._common_dir = Path(out.strip())
        return self._common_dir

    async def resolve(self, tag: str) -> str | None:
        try:
            return (await self._git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")).strip()
        except DeployerError:
            return None

    async def compare(self, base: str, head: str, limit: int) -> Comparison:
        """`head` against `base` in the local repository: the counts from `git rev-list
        --left-right --count base...head` (left: only in base, so behind; right: ahead), the
        commits from `git log` over base..head (added) and head..base (removed), newest first."""
        base_sha, head_sha = await self._commit(base), await self._commit(head)
        counts = await self._git("rev-list", "--left-right", "--count", f"{base_sha}...{head_sha}")
        behind, ahead = (int(n) for n in counts.split())
        added = await self._log(f"{base_sha}..{head_sha}", limit) if ahead else ()
        removed = await self._log(f"{head_sha}..{base_sha}", limit) if behind else ()
        return Comparison(ahead=ahead, behind=behind, added=added, removed=removed)

    async def checks(self, commit: str) -> list[Check] | None:
        return None  # a local repository has no CI to ask

    async def commit_times(self, commits: Sequence[str]) -> dict[str, datetime]:
        """One `git cat-file --batch` for all of them (a process per commit would cost more
        than the page that asks)."""
        names = commit_times.wanted(commits)
        if not names:
            return {}
        try:
            proc = await asyncio.create_subprocess_exec(
                "git", "-C", str(self.repo), "cat-file", "--batch",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as e:
            raise DeployerError(f"could not run git: {e}") from e
        out, err = await proc.communicate("".join(f"{n}\n" for n in names).encode())
        if proc.returncode != 0:
            raise DeployerError(f"git cat-file failed in {self.repo}: {err.decode(errors='replace').strip()[:300]}")
        return commit_times.parse_batch(out)

    async def _commit(self, ref: str) -> str:
        """The full sha of the commit `ref` names, or a DeployerError saying there is none.
        (--end-of-options: a ref that starts with "-" is a name, never an option.)"""
        try:
            out = await self._git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        except DeployerError:
            out = ""
        if not out.strip():
            raise DeployerError(f"no commit {shown(ref, 80)!r} in the repository {self.repo}")
        return out.strip()

    async def _log(self, revisions: str, limit: int) -> tuple[CommitSummary, ...]:
        if limit <= 0:
            return ()
        out = await self._git("log", "--no-show-signature", "--encoding=UTF-8", f"--format={_LOG_FIELDS}",
                              "-n", str(limit), revisions, "--")
        return parse_log(out)

    async def _git(self, *args: str) -> str:
        try:
            proc = await asyncio.create_subprocess_exec(
                "git", "-C", str(self.repo), *args,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as e:
            raise DeployerError(f"could not run git: {e}") from e
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise DeployerError(
                f"git {args[0]} failed in {self.repo}: {err.decode(errors='replace').strip()[:300]}"
            )
        return out.decode(errors="replace")  # a commit message need not be UTF-8


class CommandRunner:
    """Deploys by running the deploy command in the repository, with an allow-listed
    environment (see the module's docstring)."""

    resumable = False  # a command cannot be asked whether it already ran for a deploy id

    def __init__(
        self, repo: Path, command: str = DRY_RUN, timeout: float = 1800, passthrough: tuple[str, ...] = (),
        live: LiveOutput | None = None,
    ) -> None:
        self.repo = repo
        self.passthrough = tuple(passthrough)  # DEPLOY_ENV_PASSTHROUGH
        self.argv = command_argv(command)
        self.timeout = timeout
        self.live = live  # where its output goes as it comes (the console's live tail)

    async def deploy(self, request: DeployRequest) -> DeployOutcome:
        values = {"service": request.service, "tag": request.tag, "environment": request.environment,
                  "commit": request.commit}
        argv = [arg.format(**values) for arg in self.argv]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.repo,
                env=self.environment(request),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout kills its children too
            )
        except OSError as e:
            why = e.strerror or str(e)
            raise DeployerError(wording.deploy_command_not_started(argv[0], str(self.repo), why)) from e
        lines = output.Lines(OUTPUT_LINES)
        assert proc.stdout is not None
        try:
            await asyncio.wait_for(output.read_all(proc.stdout, lines, request.deploy_id, self.live), self.timeout)
            await proc.wait()
        except TimeoutError:
            _kill_group(proc)
            await proc.wait()
            return DeployOutcome(False, None, f"the deploy command timed out after {self.timeout:.0f} s")
        return DeployOutcome(proc.returncode == 0, proc.returncode, lines.tail(OUTPUT_LINES))

    def environment(self, request: DeployRequest) -> dict[str, str]:
        """The deploy command's whole environment: an allow-list from the bot's, then what
        identifies this deploy (which no passthrough can override)."""
        allowed = {*BASE_ENV, *self.passthrough}
        return {
            **{k: v for k, v in os.environ.items() if k in allowed or k.startswith("LC_")},
            "DEPLOY_ID": request.deploy_id,
            "DEPLOY_SERVICE": request.service,
            "DEPLOY_TAG": request.tag,
            "DEPLOY_ENVIRONMENT": request.environment,
            "DEPLOY_COMMIT": request.commit,
        }


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the deploy command and whatever it started (its process group: a shell's kubectl, a
    script's background job), so nothing goes on deploying once "failed" is reported."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended just now
    except PermissionError:
        proc.kill()  # a child that left the group for one we may not signal: at least the command


class CommandDeployer(Pair):
    """The default deployer: a local repository's versions, deployed by a command."""

    def __init__(
        self, repo: Path, command: str = DRY_RUN, timeout: float = 1800, passthrough: tuple[str, ...] = (),
        live: LiveOutput | None = None,
    ) -> None:
        self.running = CommandRunner(repo, command, timeout, passthrough, live)  # the runner, typed
        super().__init__(GitVersions(repo), self.running)
        self.repo = repo


def shown(text: str, limit: int) -> str:
    """Text from a repository (a commit subject, an author), fit to show: one line without
    control characters or format characters (bidi overrides, zero-width ones), whitespace runs
    collapsed, at most `limit` characters."""
    text = "".join(c for c in one_line(text) if unicodedata.category(c) != "Cf")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def commit_summary(sha: str, author: str, message: str) -> CommitSummary:
    """A commit for a change preview: the first line of its message as the subject, both made
    safe to show (see shown())."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return CommitSummary(sha=sha, subject=shown(first, SUBJECT_CHARS), author=shown(author, AUTHOR_CHARS))


def parse_log(out: str) -> tuple[CommitSummary, ...]:
    """`git log --format=_LOG_FIELDS` output as summaries, in the order git gave them."""
    fields = out.split("\0")
    return tuple(commit_summary(sha.strip(), author, subject) for sha, author, subject in _triples(fields))


def _triples(fields: list[str]) -> Iterable[tuple[str, str, str]]:
    for i in range(0, len(fields) - 2, 3):
        yield fields[i], fields[i + 1], fields[i + 2]
