"""Delivery metrics over a window of days: the deploy history read by time (History.since,
so the cost follows the window, not the history's length), each commit's time from its
service's deployer (ports.CommitTimes: git or GitHub), kept once known (a commit's time never
changes), and the arithmetic of bot/core/delivery_metrics.py."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from bot.core import delivery_metrics
from bot.core.delivery_metrics import Deploy, Metrics
from bot.runtime.ports import DeployRecord, History

log = logging.getLogger(__name__)

MAX_RECORDS = 100_000  # per environment and window: a bound on one page's work, whatever is stored
CACHED_COMMITS = 100_000  # commit times kept in this process (a few MB)


class Delivery:
    def __init__(
        self, history: History, deployers: Mapping[str, object], environments: Iterable[str],
        clock: Callable[[], datetime], max_records: int = MAX_RECORDS,
    ) -> None:
        """`deployers`: by service; those with `commit_times` (ports.CommitTimes) give lead times."""
        self.history, self.deployers, self.clock = history, deployers, clock
        self.environments = sorted(environments)
        self.max_records = max_records
        self._times: OrderedDict[tuple[str, str], datetime] = OrderedDict()

    async def metrics(self, days: int, service: str | None = None, environment: str | None = None) -> Metrics:
        """The window of `days` ending now; `service`, `environment` None: all of them."""
        until = self.clock()
        records = await self.records(until - timedelta(days=days), service, environment)
        times = await self.commit_times(records)
        deploys = [_deploy(r, times.get((r.service, r.commit))) for r in records]
        return delivery_metrics.compute(deploys, until, days)

    async def records(self, after: datetime, service: str | None, environment: str | None) -> list[DeployRecord]:
        found: list[DeployRecord] = []
        for env in [environment] if environment else self.environments:
            found += [r for r in await self.history.since(env, after, self.max_records)
                      if service is None or r.service == service]
        return found

    async def commit_times(self, records: Sequence[DeployRecord]) -> dict[tuple[str, str], datetime]:
        """(service, commit) -> its time, for those known: from this process's cache, else one
        ask per service of its deployer. A deployer that fails costs the lead times of its
        service on this page, not the page."""
        missing: dict[str, list[str]] = {}
        for r in records:
            if r.commit and (r.service, r.commit) not in self._times:
                missing.setdefault(r.service, []).append(r.commit)
        for service, commits in missing.items():
            ask = getattr(self.deployers.get(service), "commit_times", None)
            if ask is None:
                continue
            try:
                found = await ask(list(dict.fromkeys(commits)))
            except Exception as e:  # a repository unreachable, GitHub down: show the rest
                log.warning("delivery metrics: no commit times for %s: %s", service, e)
                continue
            for commit, when in found.items():
                self._remember((service, commit), when)
        return {(r.service, r.commit): self._times[(r.service, r.commit)]
                for r in records if (r.service, r.commit) in self._times}

    def _remember(self, key: tuple[str, str], when: datetime) -> None:
        self._times[key] = when
        if len(self._times) > CACHED_COMMITS:
            self._times.popitem(last=False)


def _deploy(r: DeployRecord, committed_at: datetime | None) -> Deploy:
    return Deploy(
        service=r.service, environment=r.environment, deploy_id=r.deploy_id, commit=r.commit, ok=r.ok,
        at=r.at, faulty=r.faulty, rollback_of=r.rollback_of, approval_asked_at=r.approval_asked_at,
        decided_at=r.decided_at, decided_by=r.decided_by, committed_at=committed_at,
    )
