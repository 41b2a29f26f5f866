"""The fault suite's list and its runner: a fault is one entry, a name and a function that
starts what it needs on a Rig, puts a Load on it, injects the fault, heals it where it heals,
and says what a person would have seen. The runner then checks the invariants."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.testing.faults.rig import FIGURES, Load, Rig, check


@dataclass(frozen=True)
class Seen:
    """What the docs promise a person sees under this fault, and whether it was seen."""

    answer: str
    ok: bool


@dataclass(frozen=True)
class Fault:
    name: str
    inject: Callable[[Rig, Load, int], Seen]
    settings: Callable[[], dict[str, str]] = dict  # the bot's settings for this fault (made when it runs)
    embedded_redis: bool = False


@dataclass(frozen=True)
class Result:
    name: str
    figures: dict[str, int]
    threads: int
    seconds: float
    seen: Seen

    @property
    def ok(self) -> bool:
        return self.seen.ok and all(self.figures[k] == 0 for k in FIGURES)

    def line(self) -> str:
        counts = " ".join(f"{k} {self.figures[k]}" for k in FIGURES)
        verdict = "ok" if self.ok else "FAILED"
        return (f"{self.name:<16} {verdict:<6} threads {self.threads} deploys {self.figures['deploys']} {counts} "
                f"seconds {self.seconds:.0f} | {self.seen.answer}")


def run_fault(fault: Fault, threads: int, workdir: Path) -> Result:
    began = time.monotonic()
    rig = Rig(workdir / fault.name, fault.embedded_redis, **fault.settings())
    try:
        load = Load(rig)
        try:
            seen = fault.inject(rig, load, threads)
        except Exception as e:  # a fault that could not even be run is a failed fault, said on its line
            seen = Seen(f"did not run: {e!r}"[:400], False)
        figures = check(load)
    finally:
        rig.stop()
    return Result(fault.name, figures, len(load.launches), time.monotonic() - began, seen)


def run(faults: Sequence[Fault], threads: int, workdir: Path, log: Callable[[str], None] = print) -> list[Result]:
    results = []
    for fault in faults:
        result = run_fault(fault, threads, workdir)
        log(result.line())
        results.append(result)
    return results
