"""`bench.cpu_per_run`: the server's CPU read from /proc, block pairs and the figures judged on them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import cpu_per_run
from bench.cpu_per_run import Block, Comparison, figures, group_cpu_seconds


def _stat(proc: Path, pid: int, *, comm: str, pgrp: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0) -> None:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    (proc / str(pid)).mkdir()
    rest = f"S 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0"
    (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) {rest}\n")


def test_group_cpu_sums_the_group_and_the_leaders_reaped_children_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_per_run, "CLOCK_TICKS", 100)
    _stat(tmp_path, 500, comm="langgraph dev", pgrp=500, utime=300, stime=100, cutime=50, cstime=50)
    _stat(tmp_path, 501, comm="a (worker) )", pgrp=500, utime=20, stime=10, cutime=999, cstime=999)
    _stat(tmp_path, 777, comm="client", pgrp=777, utime=5_000, stime=5_000)
    (tmp_path / "self").mkdir()

    # leader 400 + its reaped children 100 + the worker 30 (its own cutime is its children's, not the group's)
    assert group_cpu_seconds(500, tmp_path) == pytest.approx(5.3)


def test_group_cpu_of_this_process_grows_with_work() -> None:
    pgid = os.getpgid(0)
    before = group_cpu_seconds(pgid)
    total = 0
    for n in range(3_000_000):
        total += n
    assert group_cpu_seconds(pgid) > before


def _block(graph: str, cpu_s: float, runs: int = 10) -> Block:
    return Block(graph, runs, cpu_s, wall_s=1.0, turn_seconds=[0.1] * runs)


def test_ratios_are_judged_pair_by_pair_and_summarised_by_their_median() -> None:
    comparison = Comparison(
        "fan_room",
        "bench_chain_4",
        [_block("fan_room", 0.30), _block("fan_room", 0.24), _block("fan_room", 0.40)],
        [_block("bench_chain_4", 0.20), _block("bench_chain_4", 0.20), _block("bench_chain_4", 0.40)],
    )
    summary = comparison.summary()

    assert comparison.ratios == pytest.approx([1.5, 1.2, 1.0])
    assert summary["ratio"] == pytest.approx(1.2)
    assert (summary["ratio_low"], summary["ratio_high"], summary["pairs"]) == (pytest.approx(1.0), pytest.approx(1.5), 3)
    assert summary["fan_room"]["cpu_ms_per_run"] == pytest.approx(30.0)


def _result(ratio: float, history_ratio: float) -> dict:
    side = {"cpu_ms_per_run": 20.0, "wall_p50_ms": 100.0, "wall_p95_ms": 200.0}
    pair = {"ratio": ratio, "ratio_low": ratio - 0.05, "ratio_high": ratio + 0.05, "pairs": 3}
    return {
        "same_code": {**pair, "ratio": 1.01, "a": side, "a2": side},
        "matched": {
            "fan_room": {**pair, "subject": "fan_room", "reference": "bench_chain_4", "fan_room": side, "bench_chain_4": side}
        },
        "history": {
            "fan_room": {
                **pair,
                "ratio": history_ratio,
                "subject": "fan_room turn 21+",
                "reference": "fan_room turns 1-4",
                "fan_room turn 21+": side,
                "fan_room turns 1-4": side,
            }
        },
    }


@pytest.mark.parametrize(("ratio", "history_ratio", "met"), [(1.14, 1.09, (True, True)), (1.16, 1.11, (False, False))])
def test_targets_are_judged_on_the_median_cpu_ratio(ratio: float, history_ratio: float, met: tuple[bool, bool]) -> None:
    same, matched, history = figures(_result(ratio, history_ratio))

    assert same.met is None and "two blocks of identical code" in same.note
    assert (matched.ratio, matched.met, matched.target) == (ratio, met[0], "<= 1.15x")
    assert (history.ratio, history.met, history.target) == (history_ratio, met[1], "<= 1.10x")
    assert "over 3 block pairs" in matched.note and "wall p50" in matched.note


def _stored(count: int, ratio: float, low: float, high: float) -> dict:
    subject = f"floor with {count:,} threads stored" if count else "floor on a second server, nothing stored"
    side = {"cpu_ms_per_run": 20.0 * ratio, "wall_p50_ms": 100.0, "wall_p95_ms": 200.0}
    return {
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "pairs": 3,
        "stored": count,
        "subject": subject,
        "reference": "floor, nothing stored",
        subject: side,
        "floor, nothing stored": {**side, "cpu_ms_per_run": 20.0},
    }


def test_stored_threads_are_judged_at_10000_against_the_spread_of_two_empty_servers() -> None:
    result = _result(1.0, 1.0)
    result["stored"] = [_stored(0, 1.0, 0.9, 1.12), _stored(2_000, 1.5, 1.4, 1.6), _stored(10_000, 1.05, 0.95, 1.2)]
    control, two_thousand, ten_thousand = [f for f in figures(result) if f.name.startswith("floor ") and "vs floor" not in f.name]

    assert (control.target, control.met) == ("", None) and "two servers of identical code and store" in control.note
    assert (two_thousand.value, two_thousand.reference, two_thousand.ratio, two_thousand.met) == (30.0, 20.0, 1.5, None)
    assert "outside the spread of the two servers with nothing stored (0.90x - 1.12x)" in two_thousand.note
    assert (ten_thousand.ratio, ten_thousand.met, ten_thousand.target) == (1.05, True, "<= 1.10x")
    assert "within the spread of the two servers with nothing stored" in ten_thousand.note
    assert "0.95x - 1.20x over 3 block pairs" in ten_thousand.note


@pytest.mark.parametrize(
    ("ratio", "control", "inside"),
    [
        (1.05, {"ratio_low": 0.9, "ratio_high": 1.1}, True),
        (1.10, {"ratio_low": 0.9, "ratio_high": 1.1}, True),
        (1.11, {"ratio_low": 0.9, "ratio_high": 1.1}, False),
        (0.85, {"ratio_low": 0.9, "ratio_high": 1.1}, False),
        (None, {"ratio_low": 0.9, "ratio_high": 1.1}, None),
        (1.0, None, None),
    ],
)
def test_a_ratio_is_placed_against_the_spread_of_the_same_code(
    ratio: float | None, control: dict | None, inside: bool | None
) -> None:
    assert cpu_per_run.within_noise(ratio, control) is inside


def test_target_figures_say_whether_they_lie_within_the_same_code_spread() -> None:
    _same, matched, history = figures(_result(1.14, 1.30))  # same-code spread 1.09x - 1.19x (ratio -+ 0.05)

    assert "within the spread of the same code against itself" in matched.note
    assert "outside the spread of the same code against itself" in history.note


class _FakeRuns:
    async def wait(self, thread_id: str, graph_id: str, **kwargs: object) -> dict:
        return {}


class _FakeThreads:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def delete(self, thread_id: str) -> None:
        self.deleted.append(thread_id)


async def test_every_thread_a_block_made_is_deleted_after_it() -> None:
    from types import SimpleNamespace

    from bench.turns import conversation

    client = SimpleNamespace(runs=_FakeRuns(), threads=_FakeThreads())
    made: list[list[str]] = []

    async def advanced() -> list:
        talks = [conversation(client, "fan_room") for _ in range(2)]  # type: ignore[arg-type]
        for talk in talks:
            await talk.turn()  # untimed, as history() takes them to turn 20
        made.append([t for talk in talks for t in talk.made])
        return talks

    result = await cpu_per_run.compare(
        client,  # type: ignore[arg-type]
        "ticket_triage",  # a new thread per turn
        advanced,
        blocks=2,
        runs=4,
        clients=2,
        cpu=lambda: 0.0,
    )

    deleted = client.threads.deleted
    # ticket_triage: warm-up (one turn per client) + 2 blocks of 4 turns, one thread each;
    # fan_room: 2 new conversations per block (warm-up + 2), one thread each
    assert len(deleted) == len(set(deleted)) == (2 + 2 * 4) + 3 * 2
    assert {t for block in made for t in block} <= set(deleted)
    assert [b.runs for b in result.subject_blocks] == [4, 4]
    assert [b.runs for b in result.reference_blocks] == [4, 4]


async def test_settle_waits_for_a_quiet_window_and_gives_up_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_per_run, "CLOCK_TICKS", 100)
    readings = iter([0.0, 0.05, 0.05, 0.08, 0.08, 0.09])  # busy 50 ms, busy 30 ms, then 10 ms: quiet
    taken: list[float] = []

    def cpu() -> float:
        taken.append(next(readings))
        return taken[-1]

    assert await cpu_per_run.settle(cpu, window_s=0.0, max_ticks=1, limit_s=10.0) is True
    assert len(taken) == 6

    busy = iter(float(n) for n in range(1000))
    assert await cpu_per_run.settle(lambda: next(busy), window_s=0.01, max_ticks=1, limit_s=0.05) is False


def test_late_turns_say_what_the_early_turns_say() -> None:
    from bench import conversations

    turns = conversations.turns("recycling_guide", 200)  # 7 texts: 45 is no multiple of it
    late = cpu_per_run.aligned(turns, cpu_per_run.LATE_FROM - cpu_per_run.EARLY_FROM)

    assert late[cpu_per_run.LATE_FROM : cpu_per_run.LATE_FROM + 6] == turns[cpu_per_run.EARLY_FROM : cpu_per_run.EARLY_FROM + 6]
    assert cpu_per_run.aligned(turns, 0) == turns
    assert sorted(map(repr, late)) == sorted(map(repr, turns))
