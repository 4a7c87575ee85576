"""The command adapter's options: a broken one stops the start with a message naming the key."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError
from hsm_adapters.command import CommandAdapter, build_command_adapter
from hsm_adapters.command.config import parse_options, placeholders, render
from hsm_adapters.registry import build_adapter

GOOD = {
    "lookup": {"argv": [sys.executable, "lookup.py"]},
    "stage": {"argv": [sys.executable, "stage.py", "{tape}"]},
}


def with_(**changes: object) -> dict[str, object]:
    options: dict[str, object] = {name: dict(table) for name, table in GOOD.items()}
    for dotted, value in changes.items():
        table, _, key = dotted.partition("__")
        if key:
            options[table][key] = value  # type: ignore[index]
        else:
            options[table] = value
    return options


def test_defaults_fill_in_what_is_not_given(clock):
    parsed = parse_options(GOOD)
    assert parsed.stage.argv == (sys.executable, "stage.py", "{tape}")
    assert (parsed.lookup.timeout_s, parsed.stage.timeout_s, parsed.max_workers) == (60.0, 21600.0, 2)
    assert parsed.cancel is None and parsed.health is None
    adapter = build_adapter("command", GOOD, clock)  # through the registry, as the service builds it
    assert isinstance(adapter, CommandAdapter)
    adapter.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stage": GOOD["stage"]}, "option 'lookup': required option is missing"),
        (with_(stage__argv="stage.sh --tape {tape}"), "option 'stage.argv': must be a list of strings"),
        (with_(stage__argv=[]), "option 'stage.argv': Tuple should have at least 1 item"),
        (with_(stage__argv=[sys.executable, 7]), "option 'stage.argv.1': Input should be a valid string"),
        (
            with_(stage__argv=[sys.executable, "--tape={tap}"]),
            "option 'stage.argv': unknown placeholder {tap}",
        ),
        (with_(lookup__argv=[sys.executable, "{tape}"]), "option 'lookup.argv': unknown placeholder {tape}"),
        (with_(stage__argv=[sys.executable, "{tape:>8}"]), "option 'stage.argv': placeholder {tape} in"),
        (with_(stage__timeout_s=0), "option 'stage.timeout_s': Input should be greater than 0 (got 0)"),
        (with_(stage__timeout_s="10"), "option 'stage.timeout_s': Input should be a valid number (got '10')"),
        (with_(stage__timout_s=10), "option 'stage.timout_s': unknown option"),
        (with_(max_workers=0), "option 'max_workers': Input should be greater than or equal to 1 (got 0)"),
        (with_(max_workers=True), "option 'max_workers': Input should be a valid integer (got True)"),
        (with_(workers=2), "option 'workers': unknown option"),
        (
            with_(degraded_after_failures=3, offline_after_failures=2),
            "offline_after_failures (2) must be at least degraded_after_failures (3)",
        ),
        (
            with_(stage__argv=["no-such-hsm-wrapper"]),
            "option 'stage.argv': program 'no-such-hsm-wrapper' is not found",
        ),
        (
            with_(cancel={"argv": ["/nonexistent/cancel"]}),
            "option 'cancel.argv': program '/nonexistent/cancel'",
        ),
    ],
)
def test_bad_options_are_refused_naming_the_key(options, message, clock):
    with pytest.raises(ConfigError, match="^command adapter: .*" + re.escape(message)):
        build_command_adapter(options, clock)


def test_every_bad_key_is_named_at_once():
    with pytest.raises(ConfigError) as caught:
        parse_options(with_(max_workers=0, queue_files=-1, stage__timeout_s=-1))
    for key in ("max_workers", "queue_files", "stage.timeout_s"):
        assert f"option '{key}'" in str(caught.value)


def test_placeholders_fill_in_and_double_braces_stay_literal():
    argv = ("wrapper", "--tape={tape}", "{batch}", "{{not-a-placeholder}}", '{{"json": 1}}')
    assert render(argv, {"tape": "T1", "batch": "b"}) == [
        "wrapper",
        "--tape=T1",
        "b",
        "{not-a-placeholder}",
        '{"json": 1}',
    ]
    assert placeholders("{tape}-{batch}") == {"tape", "batch"}
    with pytest.raises(ValueError, match="is not a name"):
        placeholders("{0}")


def test_the_documented_example_is_valid(clock):
    text = (Path(__file__).parents[4] / "docs" / "command-adapter.md").read_text()
    example = tomllib.loads(re.search(r"```toml\n(.*?)```", text, re.DOTALL).group(1))
    assert example["adapter"] == "command"
    options = example["adapter_options"]
    for name in ("lookup", "stage", "cancel", "health", "evict", "drive"):
        options[name]["argv"][0] = sys.executable  # the example's wrappers are not installed here
    adapter = build_command_adapter(options, clock)
    assert adapter.capacity().drives_total == 4
    assert adapter.drive_names() == ("drive01", "drive02", "drive03", "drive04")
    adapter.close()
