"""Delivery metrics of a seeded history, against numbers worked out by hand (the arithmetic
is in the comments: a change to a definition in bot/core/delivery_metrics.py shows here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.delivery_metrics import Deploy, Spread, compute, median, p90

UNTIL = datetime(2026, 11, 27, 12, tzinfo=UTC)
T0 = datetime(2026, 11, 21, tzinfo=UTC)  # inside the 7 days before UTC


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def deploy(n: int, at: datetime, commit: str, ok: bool = True, **kw) -> Deploy:
    return Deploy("api", kw.pop("environment", "production"), f"d{n}", commit, ok, at, **kw)


COMMITTED = {"c1": h(-1), "c2": h(2), "c3": h(24), "c4": h(20)}

HISTORY = [
    # d1: c1 shipped 2 h after its commit (lead 7200 s); approval asked at 0:30, alice at 0:40 (600 s)
    deploy(1, h(1), "c1", committed_at=COMMITTED["c1"], approval_asked_at=h(0.5), decided_at=h(40 / 60),
           decided_by="alice"),
    # d2: c2 fails; bob decided 30 min after the ask (1800 s)
    deploy(2, h(5), "c2", ok=False, committed_at=COMMITTED["c2"], approval_asked_at=h(4), decided_at=h(4.5),
           decided_by="bob"),
    # d3: c2 again, succeeds: lead 6 h - 2 h = 14400 s; restores d2 after 1 h (3600 s); wait 5 min (300 s)
    deploy(3, h(6), "c2", committed_at=COMMITTED["c2"], approval_asked_at=h(5 + 50 / 60),
           decided_at=h(5 + 55 / 60), decided_by="alice"),
    # d4: c3 succeeds (lead 30 h - 24 h = 21600 s), is marked faulty later; wait 20 min (1200 s)
    deploy(4, h(30), "c3", faulty=True, committed_at=COMMITTED["c3"], approval_asked_at=h(29),
           decided_at=h(29 + 20 / 60), decided_by="alice"),
    # d5: the rollback of d4 to c2, 2 h later: restores d4 (7200 s); a rollback has no lead time
    deploy(5, h(32), "c2", rollback_of="d4", committed_at=COMMITTED["c2"]),
    # d6: c4 committed at 20 h, shipped at 50 h: lead 108000 s; carol decided after 2 h (7200 s)
    deploy(6, h(50), "c4", committed_at=COMMITTED["c4"], approval_asked_at=h(46), decided_at=h(48),
           decided_by="carol"),
    # d7: an hour before the 7-day window: not counted in it (it is in the 14-day one)
    deploy(7, UNTIL - timedelta(days=7, hours=1), "c0"),
]


def test_median_and_p90_as_defined():
    assert median([3, 1, 2]) == 2 and median([4, 1, 3, 2]) == 2.5 and median([]) is None
    # nearest rank: ceil(0.9 * 10) = 9th smallest; ceil(0.9 * 3) = 3rd
    assert p90(list(range(1, 11))) == 9 and p90([5, 1, 3]) == 5 and p90([]) is None


def test_the_seeded_history_matches_the_hand_computed_metrics():
    m = compute(HISTORY, UNTIL, 7)
    assert m.since == UNTIL - timedelta(days=7)
    # in the window: d1..d6 (6); succeeded: d1, d3, d4, d5, d6 (5): 5 / 7 days
    assert m.deploys == 6 and m.deploy_frequency == 5 / 7
    # failed: d2 (did not succeed), d4 (faulty, and rolled back by d5): 2 of 6
    assert m.failed == 2 and m.change_failure_rate == 2 / 6
    # lead times [7200, 14400, 21600, 108000]: median (14400 + 21600) / 2 = 18000; p90 rank ceil(3.6) = 4th
    assert m.lead_time == Spread(18000, 108000)
    # restores [3600 (d2 -> d3), 7200 (d4 -> d5)]: median 5400
    assert m.time_to_restore == Spread(5400)
    # waits [300, 600, 1200, 1800, 7200]: median 1200; p90 rank ceil(4.5) = 5th = 7200
    assert m.approval_wait == Spread(1200, 7200)
    assert m.approvers == {"alice": 3, "bob": 1, "carol": 1}
    assert [(w.deploys, w.failed, w.lead_time, w.approval_wait) for w in m.weeks] == [(6, 2, 18000, 1200)]


def test_weeks_and_series_per_environment():
    m = compute(HISTORY, UNTIL, 14)
    # two bars: d7 alone (no commit time, no approval), then the week above
    assert [(w.deploys, w.failed, w.lead_time, w.approval_wait) for w in m.weeks] == [
        (1, 0, None, None), (6, 2, 18000, 1200)]
    assert m.deploy_frequency == 6 / 14 and m.weeks[0].start == m.since
    # c1 in staging first: its own series (5400 s: 0:30 - (-1:00)); production's lead times unchanged
    staging = deploy(8, h(0.5), "c1", environment="staging", committed_at=COMMITTED["c1"])
    both = compute([*HISTORY, staging], UNTIL, 7)
    # [5400, 7200, 14400, 21600, 108000]: median 14400, p90 rank ceil(4.5) = 5th
    assert both.lead_time == Spread(14400, 108000) and both.deploys == 7


def test_an_empty_window_says_nothing_rather_than_zero():
    m = compute([], UNTIL, 30)
    assert (m.deploys, m.failed, m.deploy_frequency, m.change_failure_rate) == (0, 0, 0, None)
    assert m.lead_time == Spread(None, None) and m.time_to_restore == Spread(None) and m.approvers == {}
    assert len(m.weeks) == 5 and m.weeks[0].end - m.weeks[0].start == timedelta(days=2)


def test_durations_rates_and_shares_for_people():
    from bot.core import wording

    # 93784 s = 1 d (86400) + 2 h (7200) + 3 min (180) + 4 s: the two largest units
    assert wording.span(93784) == "1 d 2 h" and wording.span(5400) == "1 h 30 min" and wording.span(45) == "45 s"
    assert wording.span(0) == "0 s" and wording.span(None) == "–"
    assert wording.per_day(5 / 7) == "0.71 a day" and wording.share(2 / 6) == "33%" and wording.share(None) == "–"


def test_git_batch_output_gives_each_found_commits_committer_time():
    from bot.adapters.deployers.commit_times import parse_batch, wanted

    body = (b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor d <d@x> 1700000000 +0000\n"
            b"committer d <d@x> 1763640000 +0100\n\nsubject with committer 1 +0000 in it\n")
    out = (b"aa" * 20 + b" commit " + str(len(body)).encode() + b"\n" + body + b"\n"
           + b"bb" * 20 + b" missing\n")
    # 1763640000 s since the epoch is 2025-11-20 12:00 UTC (the zone does not move the instant)
    assert parse_batch(out) == {"aa" * 20: datetime(2025, 11, 20, 12, tzinfo=UTC)}
    assert wanted(["abc1234", "abc1234", "-x", "HEAD", "v1.2.3"]) == ["abc1234"]
