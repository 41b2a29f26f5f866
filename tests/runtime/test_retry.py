"""bot.runtime.retry: the waits, the limits and what is (not) retried."""

from __future__ import annotations

import logging

import pytest

from bot.runtime.retry import retrying, retrying_for


async def attempts(policy, fail_times: int, error: Exception) -> int:
    tries = 0
    async for attempt in policy:
        with attempt:
            tries += 1
            if tries <= fail_times:
                raise error
    return tries


async def test_one_try_plus_one_per_wait_then_the_last_error_itself():
    with pytest.raises(KeyError):
        await attempts(retrying((0, 0), (KeyError,), "x"), 99, KeyError("k"))
    assert await attempts(retrying((0, 0), (KeyError,), "x"), 2, KeyError("k")) == 3


async def test_none_ends_the_waits():
    policy = retrying((0, 0, None, 5), (KeyError,), "x")
    with pytest.raises(KeyError):
        await attempts(policy, 99, KeyError("k"))
    assert policy.statistics["attempt_number"] == 3


async def test_other_errors_and_given_up_ones_are_raised_at_once():
    policy = retrying((0, 0), (KeyError,), "x")
    with pytest.raises(ValueError):
        await attempts(policy, 99, ValueError())
    assert policy.statistics["attempt_number"] == 1
    policy = retrying((0, 0), (KeyError,), "x", give_up=lambda e: e.args == ("fatal",))
    with pytest.raises(KeyError):
        await attempts(policy, 99, KeyError("fatal"))
    assert policy.statistics["attempt_number"] == 1


def recording(policy):
    """The policy with its sleeps recorded (and skipped)."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    policy.sleep = sleep
    return policy, slept


async def test_waits_are_taken_in_order_and_an_error_may_say_its_own():
    policy, slept = recording(retrying((1, 2, 4), (KeyError,), "x"))
    with pytest.raises(KeyError):
        await attempts(policy, 99, KeyError("k"))
    assert slept == [1, 2, 4]
    told = lambda e: 0.5 if e.args == ("slow",) else None  # noqa: E731
    policy, slept = recording(retrying((1, 2, 4), (KeyError,), "x", wait_for=told))
    errors = iter([KeyError("slow"), KeyError("k"), KeyError("slow"), KeyError("last")])
    with pytest.raises(KeyError):
        async for attempt in policy:
            with attempt:
                raise next(errors)
    assert slept == [0.5, 2, 0.5]


async def test_each_retry_is_logged_where_the_caller_says(caplog):
    caplog.set_level(logging.DEBUG)
    logger = logging.getLogger("test.retry")
    policy, _ = recording(retrying((0.25,), (KeyError,), "fetching", logger, logging.INFO))
    with pytest.raises(KeyError):
        await attempts(policy, 99, KeyError("k"))
    [record] = caplog.records
    assert (record.name, record.levelno) == ("test.retry", logging.INFO)
    assert record.getMessage() == "fetching failed (KeyError: 'k'); trying again in 0.2 s"


async def test_by_time_keeps_trying_until_the_time_is_up():
    policy = retrying_for(0.1, 0.01, (KeyError,), "x")
    with pytest.raises(KeyError):
        await attempts(policy, 10_000, KeyError("busy"))
    # It stopped (the error came out with 10,000 tries available) after trying again; how many
    # times depends on how busy the machine is, so no upper figure.
    assert 2 <= policy.statistics["attempt_number"] < 10_000
    assert await attempts(retrying_for(1, 0, (KeyError,), "x"), 3, KeyError()) == 4
