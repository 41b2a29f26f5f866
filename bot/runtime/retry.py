"""One way to retry: tenacity, driven by an explicit list of waits.

Every retry loop in deploybot reads the same way:

    async for attempt in retrying((0.1, 0.5, 2), on=(ConnectionError,), what="sending mail"):
        with attempt:
            await send()

A list of waits (rather than a formula) keeps each policy readable where it is used and
keeps the exact pauses the code always had. `retrying_for` is the same by time instead of
by count (keep trying while something is busy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
)
from tenacity.retry import retry_base
from tenacity.wait import wait_base

_log = logging.getLogger(__name__)


class Waits(wait_base):
    """Wait `waits[n - 1]` seconds after the n-th failed attempt (the last wait repeats).
    With `wait_for`, an exception that says how long to wait (a rate limit's Retry-After)
    is believed instead."""

    def __init__(
        self, waits: Sequence[float], wait_for: Callable[[BaseException], float | None] | None = None
    ) -> None:
        self.waits = tuple(waits) or (0.0,)
        self.wait_for = wait_for

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        if self.wait_for and outcome is not None and outcome.failed:
            error = outcome.exception()
            if error is not None and (told := self.wait_for(error)) is not None:
                return told
        return self.waits[min(retry_state.attempt_number, len(self.waits)) - 1]


def until_none(waits: Sequence[float | None]) -> tuple[float, ...]:
    """The waits before the first None: `(0.1, 0.2, None)` is two retries, then give up."""
    out: list[float] = []
    for wait in waits:
        if wait is None:
            break
        out.append(wait)
    return tuple(out)


def log_before_sleep(
    what: str, log: logging.Logger | None = None, level: int = logging.WARNING
) -> Callable[[RetryCallState], None]:
    """A tenacity `before_sleep` hook: one log line per retry (a warning unless `level`
    says otherwise), saying what failed and when it is tried again."""
    logger = log or _log

    def before_sleep(state: RetryCallState) -> None:
        wait = state.next_action.sleep if state.next_action else 0.0
        outcome = state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        why = f"{type(error).__name__}: {error}" if error is not None else "no result yet"
        logger.log(level, "%s failed (%s); trying again in %.1f s", what, why, wait)

    return before_sleep


def _retry_on(
    on: tuple[type[BaseException], ...], give_up: Callable[[BaseException], bool] | None
) -> retry_base:
    if give_up is None:
        return retry_if_exception_type(on)
    return retry_if_exception(lambda e: isinstance(e, on) and not give_up(e))


def retrying(
    waits: Sequence[float | None],
    on: tuple[type[BaseException], ...],
    what: str,
    log: logging.Logger | None = None,
    level: int = logging.WARNING,
    *,
    give_up: Callable[[BaseException], bool] | None = None,
    wait_for: Callable[[BaseException], float | None] | None = None,
) -> AsyncRetrying:
    """An AsyncRetrying that tries once, then once more after each wait in `waits`.

    - `waits`: seconds to pause before each retry, in order; so len(waits) + 1 attempts.
      A None ends the list early ("give up here"), so `(0.1, 0.2, None)` means 3 attempts
      and `()` means one attempt, no retry.
    - `on`: only these exception types are retried. Any other exception propagates at
      once, untouched.
    - `what`: names the operation in the line logged before each pause: to `log` (default:
      this module's logger) at `level` (default WARNING; DEBUG for expected retries, such
      as losing a compare-and-set race).
    - reraise=True: when the attempts run out, the last exception itself is raised (not
      tenacity's RetryError), so callers catch the same types as without retrying.
    - `give_up(e)` (optional): True for an exception of an `on` type that retrying cannot
      help (an SMTP 5xx answer): it is raised at once.
    - `wait_for(e)` (optional): how long this exception says to wait (a rate limit's
      Retry-After), or None to use the listed wait.
    """
    pauses = until_none(waits)
    return AsyncRetrying(
        stop=stop_after_attempt(len(pauses) + 1),
        wait=Waits(pauses, wait_for),
        retry=_retry_on(on, give_up),
        before_sleep=log_before_sleep(what, log, level),
        reraise=True,
    )


def retrying_for(
    seconds: float,
    wait: float,
    on: tuple[type[BaseException], ...],
    what: str,
    log: logging.Logger | None = None,
    level: int = logging.WARNING,
) -> AsyncRetrying:
    """Like retrying(), but by time: try, and after a failure of an `on` type try again
    `wait` seconds later, until an attempt ends `seconds` or more after the first began;
    then its exception is raised."""
    return AsyncRetrying(
        stop=stop_after_delay(seconds),
        wait=Waits((wait,)),
        retry=retry_if_exception_type(on),
        before_sleep=log_before_sleep(what, log, level),
        reraise=True,
    )
