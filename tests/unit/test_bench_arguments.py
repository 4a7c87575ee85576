"""A benchmark's counts are refused in argparse's one line and exit 2 before any database is touched."""

from __future__ import annotations

import pytest

from bench.bench_site_fold import main


@pytest.mark.parametrize(("option", "value"), [("--files", "0"), ("--tapes", "-3"), ("--rounds", "many")])
def test_a_count_below_one_or_not_a_number_is_one_line_and_exit_2(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([option, value, "--url", "postgresql+psycopg://nobody@127.0.0.1:1/none"])
    assert stopped.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert option in last and repr(value) in last
