"""A new leader stages the in-flight files whose verified bytes a dead leader's library left in the buffer,
instead of handing them to its own library again (a second read from tape). Both databases, virtual time."""

from __future__ import annotations

from pathlib import Path

from carousel.buffer.landing import adler32_of
from carousel.buffer.layout import BufferLayout
from carousel.config import BufferSettings
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from hsm_adapters.base import OnTape
from hsm_adapters.simulated.catalogue import CSV_HEADER
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import all_in, catalogue_files, file_states, make_cycle, run_until

FILE_BYTES = 64 * 1024


def small_catalogue(path: Path) -> dict[str, str]:
    rows = [f"/data/t{t}/f{n}.root,{FILE_BYTES},T0000{t},{n * 10**9}" for t in range(2) for n in range(3)]
    path.write_text("\n".join([",".join(CSV_HEADER), *rows]) + "\n", encoding="utf-8")
    return {"csv": str(path)}


def test_a_new_leader_stages_what_the_dead_leaders_library_wrote_and_reads_only_the_rest(
    session_factory, make_adapter, clock: ManualClock, tmp_path: Path
):
    catalogue = small_catalogue(tmp_path / "catalogue.csv")
    buffer = BufferSettings(directory=tmp_path / "buffer", capacity_bytes=10 * 1024 * 1024)
    layout = BufferLayout.at(tmp_path / "buffer")
    before = make_adapter(catalogue=catalogue)
    files = catalogue_files(before, 6, clock.now())
    add_request(session_factory, files, clock.now())
    dead = make_cycle(session_factory, before, clock, buffer=buffer)
    assert dead.run_once().files_submitted == 6
    clock.advance(3600)
    before.advance()  # the library reads all six and writes their bytes; the process dies before applying
    assert before.library.stats().files_staged == 6
    incoming = sorted(layout.incoming.iterdir())
    assert len(incoming) == 6
    short = incoming[0]
    short.write_bytes(short.read_bytes()[:-1])  # one write the crash cut short: not staged, read again

    after = make_adapter(catalogue=catalogue)  # the new leader: another process, its own library
    leader = make_cycle(session_factory, after, clock, buffer=buffer)
    first = leader.run_once()
    assert first.new_term and first.found_staged == 5
    assert first.swept == 1 and first.resubmitted == 1  # only the cut-short file goes to a library again
    run_until(leader, clock, all_in(session_factory, FileState.STAGED))
    assert after.library.stats().files_staged == 1
    assert set(file_states(session_factory).values()) == {"STAGED"}
    looked_up = {r.path: r.checksum for r in after.lookup([f.path for f in files]) if isinstance(r, OnTape)}
    for file in files:  # every file's bytes in the buffer, whole and verified
        assert adler32_of(layout.final_path(file.path)) == looked_up[file.path]


def test_bytes_that_do_not_match_the_checksum_are_read_again(
    session_factory, make_adapter, clock: ManualClock, tmp_path: Path
):
    catalogue = small_catalogue(tmp_path / "catalogue.csv")
    buffer = BufferSettings(directory=tmp_path / "buffer", capacity_bytes=10 * 1024 * 1024)
    layout = BufferLayout.at(tmp_path / "buffer")
    before = make_adapter(catalogue=catalogue)
    add_request(session_factory, catalogue_files(before, 2, clock.now()), clock.now())
    assert make_cycle(session_factory, before, clock, buffer=buffer).run_once().files_submitted == 2
    clock.advance(3600)
    before.advance()
    for written in layout.incoming.iterdir():  # the right size, other bytes
        written.write_bytes(bytes(FILE_BYTES))

    after = make_adapter(catalogue=catalogue)
    leader = make_cycle(session_factory, after, clock, buffer=buffer)
    first = leader.run_once()
    assert first.found_staged == 0 and first.resubmitted == 2
    run_until(leader, clock, all_in(session_factory, FileState.STAGED))
    assert after.library.stats().files_staged == 2
