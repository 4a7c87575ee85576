"""Running one external program: pipes that never block, lines cut where they should, programs that end."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hsm_adapters.command.runner import (
    STDERR_REASON_CHARS,
    Limits,
    Line,
    Outcome,
    ProgramRun,
    _LineSplitter,
)

from .command_support import BOUND_S, UNREACHED_TIMEOUT_S, HeldClock, marks, python_program, wait_for_mark

QUICK = Limits(timeout_s=20, kill_grace_s=0.2)


def run(argv: list[str], stdin: bytes = b"", limits: Limits = QUICK) -> tuple[list[Line], object]:
    lines: list[Line] = []
    outcome = ProgramRun(argv, stdin, limits).run(lines.append)
    return lines, outcome


def python(source: str) -> list[str]:
    return [sys.executable, "-c", source]


def test_a_megabyte_each_way_does_not_deadlock():
    # cat writes back while carousel is still writing: both pipes fill unless both are served at once.
    stdin = b"".join(b'{"key": "%06d", "path": "/star/raw/%06d.daq"}\n' % (n, n) for n in range(25_000))
    lines, outcome = run(["cat"], stdin)
    assert outcome.returncode == 0
    assert len(lines) == 25_000
    assert lines[-1] == Line(25_000, '{"key": "024999", "path": "/star/raw/024999.daq"}')


def test_a_program_that_never_reads_its_input_is_no_problem():
    lines, outcome = run(["true"], b"x" * 1_000_000)
    assert (lines, outcome.returncode) == ([], 0)


def test_an_over_long_line_is_cut_and_flagged_and_counting_goes_on():
    lines, _ = run(python("import sys; sys.stdout.write('x' * 200000 + '\\nafter\\n\\nlast')"))
    assert [(line.number, line.too_long) for line in lines] == [(1, True), (2, False), (4, False)]
    assert len(lines[0].text) == 65_536
    assert [line.text for line in lines[1:]] == ["after", "last"]


def test_a_flood_on_stderr_is_drained_and_only_its_tail_kept():
    _, outcome = run(
        python("import sys; sys.stderr.write('noise\\n' * 400000 + 'the real reason'); sys.exit(5)")
    )
    assert outcome.returncode == 5
    assert outcome.stderr_tail.endswith("noise | the real reason")
    assert len(outcome.stderr_tail) <= STDERR_REASON_CHARS + 1
    assert outcome.describe().startswith("exit status 5; stderr: …")


def test_death_by_signal_is_named():
    _, outcome = run(python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    assert outcome.returncode == -signal.SIGSEGV
    assert outcome.describe() == "killed by signal SIGSEGV"
    assert not outcome.ran_to_an_end


def test_stop_ends_a_running_program_at_once_and_before_start_nothing_runs(tmp_path: Path):
    # It sleeps an hour under a limit beyond the wait below: only the stop can end the run within it.
    marker = tmp_path / "finished"
    source = f"import os, time; print(os.getpid(), flush=True); time.sleep(3600); open({str(marker)!r}, 'w')"
    limits = Limits(timeout_s=UNREACHED_TIMEOUT_S, kill_grace_s=0.2)
    program = ProgramRun(python(source), b"", limits)
    pids: list[int] = []
    seen = threading.Event()
    result: list[object] = []

    def on_line(line: Line) -> None:
        pids.append(int(line.text))
        seen.set()

    worker = threading.Thread(target=lambda: result.append(program.run(on_line)), daemon=True)
    worker.start()
    assert seen.wait(BOUND_S), "the program never said it was up"
    program.stop("not wanted any more")
    worker.join(BOUND_S)
    if worker.is_alive():
        os.killpg(pids[0], signal.SIGKILL)  # leave nothing behind, then fail
        raise AssertionError("stop did not end the run: it waited for the program")
    assert result[0].stopped == "not wanted any more"
    assert not marker.exists(), "the program was ended, it did not finish"
    assert result[0].describe() == "stopped (not wanted any more)"

    never = ProgramRun(["/nonexistent/never-started"], b"", QUICK)
    never.stop("changed my mind")
    assert never.run(on_line).stopped == "changed my mind", "not even an attempt to start"


def test_a_program_that_closes_its_outputs_but_lives_on_is_still_bounded(tmp_path: Path):
    # Its 1 s limit counts from the moment both outputs are closed (held till then), so the run surely waits
    # in the state under test; had the limit been ignored, the program would finish after 30 s by itself.
    marker = tmp_path / "marker"
    argv = python_program(
        tmp_path,
        "lives_on",
        "import os, sys, time\n"
        "mark = lambda what: open(sys.argv[1], 'a').write(what + '\\n')\n"
        "os.close(1)\n"
        "os.close(2)\n"
        "mark('hanging')\n"
        "time.sleep(30)\n"
        "mark('finished')\n",
    )
    held = HeldClock()
    program = ProgramRun([*argv, str(marker)], b"", Limits(timeout_s=1, kill_grace_s=0.2), monotonic=held)
    result: list[Outcome] = []
    worker = threading.Thread(target=lambda: result.append(program.run(lambda line: None)), daemon=True)
    worker.start()
    wait_for_mark(marker, "hanging")
    held.release()
    worker.join(BOUND_S)
    assert not worker.is_alive(), "the run did not end at its limit"
    outcome = result[0]
    assert outcome.timed_out == "timed out after 1 s"
    assert outcome.returncode is not None and outcome.returncode < 0, "killed by a signal"
    assert marks(marker) == ["hanging"], "it never finished by itself"


@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_characters="\n\r", exclude_categories=("Cs",)), max_size=40),
        max_size=30,
    ),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20),
)
def test_lines_do_not_depend_on_how_the_bytes_arrive(texts, cuts):
    data = "".join(text + "\n" for text in texts).encode()
    splitter = _LineSplitter(max_bytes=1000)
    lines: list[Line] = []
    position, turn = 0, 0
    while position < len(data):
        size = cuts[turn % len(cuts)]
        lines += splitter.feed(data[position : position + size])
        position, turn = position + size, turn + 1
    lines += splitter.finish()
    expected = [Line(n, text) for n, text in enumerate(texts, start=1) if text.strip()]
    assert lines == expected
