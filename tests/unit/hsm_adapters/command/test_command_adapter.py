"""The command adapter against real programs: the fake HSM, made to misbehave, and small inline wrappers."""

from __future__ import annotations

import json
import logging
import os
import select
import sys
import threading
import zlib
from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import Conflict, InvalidInput, Unavailable
from hsm_adapters.base import Batch, BatchFile, Event, EventKind, Health, NotOnTape, OnTape, Unknown
from hsm_adapters.command import CommandAdapter, build_command_adapter

from .command_support import (
    BOUND_S,
    PROGRAM_TIMEOUT_S,
    TAPE,
    UNREACHED_TIMEOUT_S,
    FakeLibrary,
    HeldClock,
    ends,
    make_library,
    marks,
    python_program,
    wait_for,
    wait_for_mark,
)


@pytest.fixture
def library(tmp_path: Path) -> FakeLibrary:
    return make_library(tmp_path)


@pytest.fixture
def adapters():
    """Closes every adapter a test builds, whatever happens."""
    built: list[CommandAdapter] = []
    yield built
    for adapter in built:
        adapter.close()


def build(adapters: list[CommandAdapter], library: FakeLibrary, clock, **kwargs) -> CommandAdapter:
    adapter = library.adapter(clock, **kwargs)
    adapters.append(adapter)
    return adapter


def started(events: list[Event]) -> bool:
    return any(e.kind is EventKind.FILE_STARTED for e in events)


def staged(events: list[Event]) -> bool:
    return any(e.kind is EventKind.FILE_STAGED for e in events)


def ends_within(pid: int, timeout_s: float) -> bool:
    """True when process `pid` (not necessarily our child) has ended, or ends within the timeout."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([handle], [], [], timeout_s)  # readable once it has exited
        return bool(readable)
    finally:
        os.close(handle)


# --- the happy path, in detail ------------------------------------------------------------------------------


def test_stage_copies_each_file_and_reports_it_in_order(library, clock, adapters):
    adapter = build(adapters, library, clock)
    batch = library.batch("b1")
    adapter.submit(batch)
    by_key = ends(adapter, seen := [])
    events = seen

    assert [e.kind for e in events[:1] + events[-1:]] == [EventKind.MOUNTED, EventKind.UNMOUNTED]
    staged = [e for e in events if e.kind is EventKind.FILE_STAGED]
    assert [e.file_key for e in staged] == [f.key for f in batch.files], "reported in carousel's order"
    for file in batch.files:
        event = by_key[file.key]
        assert (event.kind, event.bytes, event.drive, event.tape) == (
            EventKind.FILE_STAGED,
            file.size_bytes,
            "fake-drive-0",
            TAPE,
        )
        assert event.at == clock.now(), "timestamps come from the injected clock"
        on_disk = library.disk / file.path.lstrip("/")
        assert on_disk.read_bytes() == (library.tapes / TAPE / file.path.lstrip("/")).read_bytes()
    first = batch.files[0]
    checksum = f"{zlib.adler32((library.tapes / TAPE / first.path.lstrip('/')).read_bytes()):08x}"
    assert adapter.lookup([first.path]) == [
        OnTape(first.path, TAPE, first.position_bytes, first.size_bytes, on_disk=True, checksum=checksum)
    ]


def test_a_wrapper_may_say_more_and_wrong_things_are_ignored(tmp_path, clock, adapters):
    # A wrapper of our own: checks the protocol version, prints extra fields, names a key it was not given,
    # reports a file twice. Only the first end of each known file counts.
    program = tmp_path / "wrapper.py"
    program.write_text(
        "import json, os, sys\n"
        "if os.environ.get('CAROUSEL_HSM_PROTOCOL') != '1':\n"
        "    sys.exit(9)\n"
        "keys = [json.loads(line)['key'] for line in sys.stdin]\n"
        "say = lambda **kw: print(json.dumps(kw), flush=True)\n"
        "say(key=keys[0], status='STAGED', bytes=5, note='adler32:1234')\n"
        "say(key='not-in-the-batch', status='STAGED')\n"
        "say(key=keys[0], status='FAILED', reason='too late')\n"
        "say(key=keys[1], status='FAILED', reason='tape damaged', retryable=False)\n"
    )
    options = {
        "lookup": {"argv": [sys.executable, str(program)]},
        "stage": {"argv": [sys.executable, str(program), "{tape}"]},
    }
    adapter = build_command_adapter(options, clock)
    adapters.append(adapter)
    adapter.submit(Batch("w", TAPE, (BatchFile("k0", "/a", 0, 10), BatchFile("k1", "/b", 10, 10))))
    by_key = ends(adapter)
    assert (by_key["k0"].kind, by_key["k0"].bytes) == (EventKind.FILE_STAGED, 5)
    assert (by_key["k1"].kind, by_key["k1"].reason, by_key["k1"].retryable) == (
        EventKind.FILE_FAILED,
        "tape damaged",
        False,
    )


# --- programs that hang, crash or talk nonsense -------------------------------------------------------------


def test_a_hung_stage_program_is_killed_and_its_files_fail_with_the_reason(
    library, clock, adapters, tmp_path
):
    # It hangs for an hour: within the wait of `ends` only its 1 s limit can end it (killed before or after it
    # has started up, the outcome is the same).
    marker = tmp_path / "marker"
    adapter = build(
        adapters,
        library,
        clock,
        stage_args=["--misbehave", "hang", "--marker", str(marker)],
        stage={"timeout_s": 1},
    )
    batch = library.batch("hung")
    adapter.submit(batch)
    by_key = ends(adapter)
    for file in batch.files:
        event = by_key[file.key]
        assert event.kind is EventKind.FILE_FAILED and event.retryable
        assert event.reason.startswith("stage program timed out after 1 s; program killed")
    assert "finished" not in marks(marker), "killed: it never ended by itself"
    assert adapter.health() is Health.DEGRADED, "a program that did not run at all counts against health"


def test_a_program_deaf_to_term_is_killed_with_its_children(library, clock, adapters, tmp_path):
    # Each limit counts from the moment the program is set up (its child started, TERM ignored): a slow start
    # on a loaded machine cannot let the limit end it before there is anything to test.
    pid_file, marker = tmp_path / "child.pid", tmp_path / "with-child"
    held = HeldClock()
    adapter = build(
        adapters,
        library,
        clock,
        monotonic=held,
        stage_args=["--misbehave", "hang-with-child", "--pid-file", str(pid_file), "--marker", str(marker)],
        stage={"timeout_s": 1},
    )
    adapter.submit(library.batch("deaf", 1))
    wait_for_mark(marker, "hanging")
    held.release()
    by_key = ends(adapter)
    assert "timed out" in by_key["deaf/0"].reason
    child = int(pid_file.read_text())
    assert ends_within(child, BOUND_S), "the program's whole process group is ended"
    assert "finished" not in marks(marker)

    marker = tmp_path / "deaf"
    held = HeldClock()
    deaf = build(
        adapters,
        library,
        clock,
        monotonic=held,
        stage_args=["--misbehave", "hang-ignoring-term", "--marker", str(marker)],
        stage={"timeout_s": 1},
    )
    deaf.submit(library.batch("deafer", 1))
    wait_for_mark(marker, "hanging")  # TERM is ignored from here on: only KILL can end it
    held.release()
    assert "timed out after 1 s; program killed" in ends(deaf)["deafer/0"].reason
    assert "finished" not in marks(marker), "killed, not ended by itself"


def test_an_idle_timeout_catches_a_silent_program_in_a_long_batch(library, clock, adapters, tmp_path):
    # The gate never opens: the first copy never ends, and the whole-call limit lies beyond any wait here, so
    # only the idle limit can end the program. It counts from the moment the program has spoken (held till
    # then): the silence in the middle of a batch is caught, not a slow start.
    gate, marker = tmp_path / "gate", tmp_path / "marker"
    held = HeldClock()
    adapter = build(
        adapters,
        library,
        clock,
        monotonic=held,
        stage_args=["--gate", str(gate), "--marker", str(marker)],
        stage={"timeout_s": UNREACHED_TIMEOUT_S, "idle_timeout_s": 0.5},
    )
    adapter.submit(library.batch("idle", 2))
    seen: list[Event] = []
    wait_for(adapter, seen, started)
    held.release()
    by_key = ends(adapter, seen)
    for key in ("idle/0", "idle/1"):
        assert by_key[key].kind is EventKind.FILE_FAILED
        assert by_key[key].reason.startswith("stage program printed nothing for 0.5 s; program killed")
    assert library.on_disk("idle") == [], "the first file was never copied"
    assert "finished" not in marks(marker)


def test_files_reported_before_a_hang_or_crash_keep_their_result(library, clock, adapters):
    # The hang's 1 s limit counts from the first file's report (held till then), so a slow start cannot end
    # the program before it has reported anything; the crash needs no limit (it ends by itself).
    for misbehaviour, limit_s, fragment in (
        ("hang-after-first", 1, "timed out after 1 s"),
        (
            "crash-after-first",
            PROGRAM_TIMEOUT_S,
            "exit status 3; stderr: fake_hsm: simulated crash after the first file",
        ),
    ):
        held = HeldClock()
        adapter = build(
            adapters,
            library,
            clock,
            monotonic=held,
            stage_args=["--misbehave", misbehaviour],
            stage={"timeout_s": limit_s},
        )
        batch = library.batch(misbehaviour, 3)
        adapter.submit(batch)
        seen: list[Event] = []
        wait_for(adapter, seen, staged)
        held.release()
        by_key = ends(adapter, seen)
        assert by_key[f"{misbehaviour}/0"].kind is EventKind.FILE_STAGED
        for n in (1, 2):
            assert by_key[f"{misbehaviour}/{n}"].kind is EventKind.FILE_FAILED
            assert fragment in by_key[f"{misbehaviour}/{n}"].reason
        assert adapter.health() is Health.ONLINE, "it did run: it reported a file"


@pytest.mark.parametrize(
    ("misbehaviour", "reason", "retryable"),
    [
        ("crash", "stage program failed: exit status 3; stderr: fake_hsm: simulated crash", True),
        (
            "garbage",
            "program exited without reporting this file; unparseable line 1 (not JSON): 'this is not json'",
            True,
        ),
        ("silent", "program exited without reporting this file", True),
        (
            "retry-later",
            "the HSM asked to retry later (stage program: exit status 75; stderr: fake_hsm: library busy)",
            True,
        ),
        (
            "not-on-tape",
            f"not on tape {TAPE} (stage program: exit status 66; stderr: fake_hsm: none of",
            False,
        ),
    ],
)
def test_a_stage_program_that_misbehaves_fails_its_files_with_the_reason(
    library, clock, adapters, misbehaviour, reason, retryable
):
    adapter = build(adapters, library, clock, stage_args=["--misbehave", misbehaviour])
    batch = library.batch(misbehaviour, 2)
    adapter.submit(batch)
    by_key = ends(adapter)
    for file in batch.files:
        event = by_key[file.key]
        assert event.kind is EventKind.FILE_FAILED
        assert event.reason.startswith(reason), event.reason
        assert event.retryable is retryable


@pytest.mark.parametrize(
    ("misbehaviour", "answer", "reason"),
    [
        ("hang", Unknown, "lookup program timed out after 1 s; program killed"),
        ("crash", Unknown, "lookup program failed: exit status 3; stderr: fake_hsm: simulated crash"),
        ("garbage", Unknown, "lookup program did not report this path; unparseable line 1 (not JSON)"),
        ("silent", Unknown, "lookup program did not report this path"),
        ("retry-later", Unknown, "the HSM asked to retry later"),
        ("not-on-tape", NotOnTape, "not on tape (lookup program: exit status 66"),
    ],
)
def test_a_lookup_program_that_misbehaves_gives_answers_with_the_reason(
    library, clock, adapters, misbehaviour, answer, reason
):
    # Only the hang is ended by its limit; the others must not race a limit while Python starts.
    limit_s = 1 if misbehaviour == "hang" else PROGRAM_TIMEOUT_S
    adapter = build(
        adapters, library, clock, lookup_args=["--misbehave", misbehaviour], lookup={"timeout_s": limit_s}
    )
    paths = [library.files[0].path, "/elsewhere"]
    results = adapter.lookup(paths)
    assert [r.path for r in results] == paths
    for result in results:
        assert type(result) is answer
        assert result.reason.startswith(reason), result.reason


def test_a_missing_program_fails_clearly_and_health_follows(tmp_path, library, adapters):
    clock = ManualClock()
    wrapper = tmp_path / "hsm-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    options = library.options(offline_after_failures=2, offline_hold_s=60)
    for name in ("lookup", "stage"):
        options[name]["argv"] = [str(wrapper), *options[name]["argv"][1:]]
    adapter = build_command_adapter(options, clock)
    adapters.append(adapter)
    assert adapter.lookup([library.files[0].path])[0].__class__ is OnTape
    wrapper.unlink()  # removed under a running service

    [answer] = adapter.lookup([library.files[0].path])
    assert isinstance(answer, Unknown)
    assert (
        answer.reason == f"lookup program could not start: cannot run '{wrapper}': No such file or directory"
    )
    assert adapter.health() is Health.DEGRADED
    adapter.submit(library.batch("gone", 1))
    event = ends(adapter)["gone/0"]
    assert event.kind is EventKind.FILE_FAILED and event.reason.startswith("stage program could not start")
    assert adapter.health() is Health.OFFLINE
    clock.advance(61)
    assert adapter.health() is Health.DEGRADED, "after the hold, the scheduler may probe again"

    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    assert isinstance(adapter.lookup([library.files[0].path])[0], OnTape)
    assert adapter.health() is Health.ONLINE


# --- cancel -------------------------------------------------------------------------------------------------


def test_cancel_drops_a_queued_batch_before_it_runs(library, clock, adapters, tmp_path):
    # One worker, and the first batch holds at its gate: the second stays queued until the test opens it.
    gate = tmp_path / "gate"
    adapter = build(adapters, library, clock, max_workers=1, stage_args=["--gate", str(gate)])
    first, second = library.batch("first", 2), library.batch("second", 3)
    adapter.submit(first)
    adapter.submit(second)
    keys = [file.key for file in second.files]

    result = adapter.cancel(keys)

    assert (result.cancelled, result.in_progress, result.unknown) == (tuple(keys), (), ())
    immediately = adapter.poll_events()
    assert [e.file_key for e in immediately if e.kind is EventKind.FILE_CANCELLED] == keys
    gate.touch()
    seen: list[Event] = immediately
    by_key = ends(adapter, seen)
    assert not any(e.batch_key == "second" and e.kind is EventKind.MOUNTED for e in seen), "never ran"
    assert all(by_key[file.key].kind is EventKind.FILE_STAGED for file in first.files)


def test_cancel_asks_the_cancel_program_about_a_running_batch(library, clock, adapters, tmp_path):
    # The stage program holds in run/0 (at its gate) until the cancel program has answered, however long a
    # Python start takes: run/2 and run/3 are surely not begun when it claims them.
    gate = tmp_path / "gate"
    adapter = build(adapters, library, clock, stage_args=["--gate", str(gate)])
    batch = library.batch("run")
    adapter.submit(batch)
    seen: list[Event] = []
    wait_for(adapter, seen, started)

    result = adapter.cancel(["run/0", "run/2", "run/3"])

    assert result.cancelled == ("run/2", "run/3")
    assert result.in_progress == ("run/0",)
    gate.touch()
    by_key = ends(adapter, seen)
    assert [by_key[f"run/{n}"].kind for n in range(4)] == [
        EventKind.FILE_STAGED,
        EventKind.FILE_STAGED,
        EventKind.FILE_CANCELLED,
        EventKind.FILE_CANCELLED,
    ]


def test_without_a_cancel_program_a_batch_wholly_cancelled_is_stopped(library, clock, adapters, tmp_path):
    # The gate never opens and the program's limit lies beyond every wait here: within the wait of `ends`,
    # only being stopped can end it.
    gate, marker = tmp_path / "gate", tmp_path / "marker"
    adapter = build(
        adapters,
        library,
        clock,
        cancel=False,
        stage_args=["--gate", str(gate), "--marker", str(marker)],
        stage={"timeout_s": UNREACHED_TIMEOUT_S},
    )
    batch = library.batch("stop")
    adapter.submit(batch)
    seen: list[Event] = []
    wait_for(adapter, seen, started)
    keys = [file.key for file in batch.files]

    partial = adapter.cancel(keys[1:])
    assert (partial.cancelled, partial.in_progress) == ((), tuple(keys[1:])), "cannot drop single files"
    whole = adapter.cancel(keys)

    assert (whole.cancelled, whole.in_progress) == ((), tuple(keys)), "mid-read: honest about it"
    by_key = ends(adapter, seen)
    assert "finished" not in marks(marker) and library.on_disk("stop") == [], "stopped, not read to the end"
    for key in keys:
        assert by_key[key].kind is EventKind.FILE_CANCELLED
        assert by_key[key].reason == "cancelled by carousel; the HSM did not read it"
    assert adapter.health() is Health.ONLINE, "a program carousel stopped says nothing about the HSM"


# --- capacity, health, events, lifetime ---------------------------------------------------------------------


def test_capacity_follows_the_work(library, clock, adapters, tmp_path):
    gate = tmp_path / "gate"  # the work stays where it is until the test opens it
    adapter = build(adapters, library, clock, max_workers=1, queue_files=10, stage_args=["--gate", str(gate)])
    idle = adapter.capacity()
    assert (idle.drives_total, idle.drives_free, idle.queue_slots, idle.mounted_tapes) == (
        1,
        1,
        {"default": 10},
        (),
    )
    adapter.submit(library.batch("busy", 2))
    adapter.submit(library.batch("waiting", 3))
    seen: list[Event] = []
    wait_for(adapter, seen, started)
    busy = adapter.capacity()
    assert (busy.drives_free, busy.mounted_tapes) == (0, (TAPE,))
    assert busy.queue_slots["default"] <= 10 - 3
    assert busy.queue_slots == {"default": 10 - 5}, "all five files wait for their end"
    gate.touch()
    ends(adapter, seen)
    assert adapter.capacity() == idle


def test_a_health_program_is_asked_and_its_answer_kept_for_a_while(tmp_path, library, adapters):
    clock = ManualClock()
    calls = tmp_path / "health-calls"
    program = python_program(
        tmp_path,
        "health",
        "import json, sys\n"
        "open(sys.argv[1], 'a').write('x')\n"
        "print(json.dumps({'health': sys.argv[2], 'reason': 'two drives down'}))\n",
    )
    options = library.options(health={"argv": [*program, str(calls), "DEGRADED"], "cache_s": 30})
    adapter = build_command_adapter(options, clock)
    adapters.append(adapter)

    assert adapter.health() is Health.DEGRADED
    assert adapter.health() is Health.DEGRADED
    assert calls.read_text() == "x", "asked once within cache_s"
    clock.advance(31)
    assert adapter.health() is Health.DEGRADED
    assert calls.read_text() == "xx"


def test_a_health_program_that_says_nothing_means_offline(library, clock, adapters):
    options = library.options(health={"argv": [sys.executable, "-c", "pass"]})
    adapter = build_command_adapter(options, clock)
    adapters.append(adapter)
    assert adapter.health() is Health.OFFLINE


def test_a_failing_sink_loses_no_event(library, clock, adapters):
    adapter = build(adapters, library, clock)
    received: list[Event] = []

    def flaky(event: Event) -> None:
        if event.kind is EventKind.FILE_STAGED and not any(e.kind is EventKind.FILE_STAGED for e in received):
            raise RuntimeError("sink hiccup")
        received.append(event)

    adapter.set_sink(flaky)
    adapter.submit(library.batch("s", 2))
    assert adapter.wait_idle(BOUND_S)
    kept = adapter.poll_events()
    assert kept and kept[0].kind is EventKind.FILE_STAGED, (
        "the refused event and those after it wait, in order"
    )
    seqs = [e.seq for e in received] + [e.seq for e in kept]
    assert seqs == list(range(1, len(seqs) + 1))


def test_set_sink_hands_over_what_was_waiting(library, clock, adapters):
    adapter = build(adapters, library, clock)
    adapter.submit(library.batch("w", 2))
    assert adapter.wait_idle(BOUND_S)
    received: list[Event] = []
    adapter.set_sink(received.append)
    assert [e.seq for e in received] == list(range(1, len(received) + 1)) and len(received) >= 4
    assert adapter.poll_events() == []


def test_submit_refuses_a_batch_that_names_a_file_twice_or_one_already_pending(
    library, clock, adapters, tmp_path
):
    gate = tmp_path / "gate"  # batch "one" stays pending until the test opens it
    adapter = build(adapters, library, clock, stage_args=["--gate", str(gate)])
    file = library.batch("x", 1).files[0]
    with pytest.raises(InvalidInput, match=r"names file key 'x/0' twice"):
        adapter.submit(Batch("twice", TAPE, (file, file)))
    adapter.submit(Batch("one", TAPE, (file,)))
    with pytest.raises(Conflict, match=r"file key 'x/0' is already pending in batch 'one'"):
        adapter.submit(Batch("two", TAPE, (file,)))
    gate.touch()
    assert ends(adapter)["x/0"].kind is EventKind.FILE_STAGED


def test_close_stops_programs_ends_every_file_and_leaves_nothing_behind(library, clock, adapters, tmp_path):
    # The running program holds at its gate for ever, under a limit beyond the bounded wait for close():
    # close() returns within that wait only by stopping it.
    gate, marker = tmp_path / "gate", tmp_path / "marker"
    adapter = build(
        adapters,
        library,
        clock,
        max_workers=1,
        stage_args=["--gate", str(gate), "--marker", str(marker)],
        stage={"timeout_s": UNREACHED_TIMEOUT_S},
    )
    running, queued = library.batch("running", 2), library.batch("queued", 2)
    adapter.submit(running)
    adapter.submit(queued)
    seen: list[Event] = []
    wait_for(adapter, seen, started)

    closing = threading.Thread(target=adapter.close, daemon=True)
    closing.start()
    closing.join(BOUND_S)
    assert not closing.is_alive(), "close() waited for the running program instead of stopping it"

    assert "finished" not in marks(marker) and library.on_disk("running") == [], "stopped mid-read"
    by_key = ends(adapter, seen)
    for file in running.files:
        assert by_key[file.key].reason == "stage program stopped (the command adapter is closing)"
    for file in queued.files:
        assert by_key[file.key].reason == "the command adapter closed before the batch ran"
    assert all(e.kind is EventKind.FILE_FAILED and e.retryable for e in by_key.values())
    assert not [t for t in threading.enumerate() if t.name.startswith("carousel-stage")]
    with pytest.raises(Unavailable):
        adapter.submit(library.batch("late", 1))
    assert isinstance(adapter.lookup([library.files[0].path])[0], Unknown)
    assert adapter.health() is Health.OFFLINE
    assert adapter.capacity().drives_free == 0


def test_the_request_reaching_the_program_is_what_carousel_asked(tmp_path, clock, adapters):
    record = tmp_path / "request.json"
    program = python_program(
        tmp_path,
        "recorder",
        "import json, sys\n"
        "lines = [json.loads(line) for line in sys.stdin]\n"
        "open(sys.argv[1], 'w').write(json.dumps({'argv': sys.argv[2:], 'lines': lines}))\n",
    )
    options = {
        "lookup": {"argv": ["true"]},
        "stage": {
            "argv": [*program, str(record), "--tape={tape}", "{batch}", "{service_class}", "{{literal}}"]
        },
    }
    adapter = build_command_adapter(options, clock)
    adapters.append(adapter)
    odd_path = "/star/with\ttab and space/ünï.root"
    adapter.submit(Batch("b-7", "T 1", (BatchFile("k", odd_path, 123, 456),), service_class="express"))
    ends(adapter)
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["--tape=T 1", "b-7", "express", "{literal}"]
    assert seen["lines"] == [
        {"key": "k", "path": odd_path, "position_bytes": 123, "size_bytes": 456, "destination": None}
    ]


def test_a_flood_of_garbage_is_logged_in_a_few_lines(tmp_path, clock, adapters, caplog):
    program = python_program(tmp_path, "flood", "for n in range(5000):\n    print('garbage', n)\n")
    adapter = build_command_adapter({"lookup": {"argv": program}, "stage": {"argv": program}}, clock)
    adapters.append(adapter)
    with caplog.at_level(logging.WARNING, logger="hsm_adapters.command.adapter"):
        [answer] = adapter.lookup(["/x"])
    assert answer.reason == (
        "lookup program did not report this path; unparseable line 1 (not JSON): 'garbage 0'"
    )
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 4
    assert messages[-1] == "command adapter: lookup program: 4997 more problems not logged"
