"""A fake HSM for the command adapter: plays a tape library on the local file system.

A tape is a directory, <tape_root>/<TAPE>/, holding each file under its HSM path without the leading slash;
<tape_root>/<TAPE>/.index.json maps those relative paths to their positions on the tape in bytes. Staging
writes a file's bytes to the destination carousel gave (the whole file, closed before STAGED is reported,
with its adler32), or, for a file without one, copies it into <disk_root>/<path>, the HSM's own disk copy;
evict removes such copies. A write that fails is reported FAILED, retryable, with the reason. The program
speaks the command adapter's
protocol (docs/command-adapter.md) and misbehaves on demand, so tests drive the adapter's failure handling
through real subprocesses. Tests follow it by events, not by time: --gate holds each copy until a file exists,
and --marker records how far the program got (started, hanging, finished).

    python fake_hsm.py --tape-root T --disk-root D [options] {lookup,stage,cancel,health,evict,drive}

It uses only the standard library, so any Python runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

INDEX_NAME = ".index.json"
STATE_DIR_NAME = ".state"  # cancel and stage agree here on who got a file first
OPERATIONS = ("lookup", "stage", "cancel", "health", "evict", "drive")
DRIVES_DIR_NAME = ".drives"  # drive: one file per drive, holding the last command it was given
CHUNK_BYTES = 1 << 20
MISBEHAVIOURS = (
    "hang",  # print nothing, never end
    "hang-ignoring-term",  # the same, deaf to SIGTERM: only KILL ends it
    "hang-with-child",  # the same, with a child process in its group (pid written to --pid-file)
    "hang-after-first",  # stage: report the first file, then hang
    "crash",  # a message on stderr, exit status 3, nothing on stdout
    "crash-after-first",  # stage: report the first file, then crash
    "garbage",  # lines that are not the protocol, exit status 0
    "silent",  # exit status 0, nothing printed
    "retry-later",  # exit status 75 (the HSM is busy)
    "not-on-tape",  # exit status 66 (none of these files is on tape)
    "disk-full",  # stage: every write to a destination fails with ENOSPC (reported FAILED, retryable)
    "corrupt",  # stage: the bytes written to a destination differ from the checksum reported (one flipped)
)
CRASH_STATUS = 3
HANG_S = 3600.0
GATE_POLL_S = 0.01


def mark(args: argparse.Namespace, what: str) -> None:
    """One line in the --marker file: how far the program got ("started <pid>", "hanging", "finished")."""
    if args.marker:
        with open(args.marker, "a") as marker:
            marker.write(what + "\n")


def say(obj: dict[str, object]) -> None:
    print(json.dumps(obj), flush=True)


def requests() -> Iterator[dict[str, object]]:
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        value = json.loads(line)
        if not isinstance(value, dict):
            raise SystemExit(f"fake_hsm: stdin line {number} is not a JSON object")
        yield value


def relative(path: str) -> PurePosixPath | None:
    """The HSM path as a path under a tape directory; None when it is not absolute or climbs out."""
    pure = PurePosixPath(path)
    if not pure.is_absolute() or ".." in pure.parts:
        return None
    return pure.relative_to("/")


def positions(tape_dir: Path) -> dict[str, int]:
    index = tape_dir / INDEX_NAME
    if not index.is_file():
        return {}
    loaded = json.loads(index.read_text())
    return {str(key): int(value) for key, value in loaded.items()}


def tapes(tape_root: Path) -> list[Path]:
    return sorted(entry for entry in tape_root.iterdir() if entry.is_dir() and not entry.name.startswith("."))


def hang(args: argparse.Namespace) -> None:
    if args.misbehave == "hang-ignoring-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.misbehave == "hang-with-child":
        child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({HANG_S})"])
        if args.pid_file:
            Path(args.pid_file).write_text(str(child.pid))
    mark(args, "hanging")  # set up (TERM ignored, child started): only a kill ends it now
    time.sleep(HANG_S)


def misbehave_at_start(args: argparse.Namespace) -> None:
    mode = args.misbehave
    if mode in ("hang", "hang-ignoring-term", "hang-with-child"):
        hang(args)
    elif mode == "crash":
        print("fake_hsm: simulated crash", file=sys.stderr, flush=True)
        raise SystemExit(CRASH_STATUS)
    elif mode == "garbage":
        for text in ("this is not json", '{"half": ', "[1, 2, 3]", '{"status": "ON_TAPE"}'):
            print(text, flush=True)
        raise SystemExit(0)
    elif mode == "silent":
        raise SystemExit(0)
    elif mode == "retry-later":
        print("fake_hsm: library busy", file=sys.stderr, flush=True)
        raise SystemExit(75)
    elif mode == "not-on-tape":
        print("fake_hsm: none of these files is on tape", file=sys.stderr, flush=True)
        raise SystemExit(66)


def lookup(args: argparse.Namespace) -> None:
    tape_root, disk_root = Path(args.tape_root), Path(args.disk_root)
    library = [(tape_dir, positions(tape_dir)) for tape_dir in tapes(tape_root)]
    for request in requests():
        path = str(request["path"])
        rel = relative(path)
        if rel is None:
            say({"path": path, "status": "NOT_ON_TAPE", "reason": "not an absolute HSM path"})
            continue
        on_disk = (disk_root / rel).is_file()
        for tape_dir, index in library:
            if (tape_dir / rel).is_file():
                if str(rel) not in index:
                    say(
                        {
                            "path": path,
                            "status": "UNKNOWN",
                            "reason": f"no position recorded on {tape_dir.name}",
                        }
                    )
                else:
                    size = (tape_dir / rel).stat().st_size
                    say(
                        {
                            "path": path,
                            "status": "ON_TAPE",
                            "tape": tape_dir.name,
                            "position_bytes": index[str(rel)],
                            "size_bytes": size,
                            "on_disk": on_disk,
                            "checksum": adler32_of(tape_dir / rel),
                        }
                    )
                break
        else:
            say({"path": path, "status": "NOT_ON_TAPE", "reason": "on no tape", "on_disk": on_disk})


def claim(state_dir: Path, batch: str, key: str, what: str) -> str:
    """Who had this file of this batch first, stage ("started") or cancel ("cancelled"): atomic via link."""
    final = state_dir / batch.encode().hex() / key.encode().hex()
    final.parent.mkdir(parents=True, exist_ok=True)
    draft = final.with_name(f"{final.name}.{uuid.uuid4().hex}")
    draft.write_text(what)
    try:
        os.link(draft, final)
    except FileExistsError:
        return final.read_text()
    finally:
        draft.unlink()
    return what


def copy_into(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    draft = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    shutil.copyfile(source, draft)
    os.replace(draft, target)


def adler32_of(source: Path) -> str:
    value = 1
    with source.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            value = zlib.adler32(chunk, value)
    return f"{value:08x}"


def write_to(source: Path, destination: str, misbehave: str | None = None) -> str:
    """Copy the whole file to the destination carousel chose and close it; the adler32 of the file.
    Its directory exists (carousel made it): a missing one is an error, not something to create."""
    value = 1
    with source.open("rb") as stream, open(destination, "wb") as target:
        if misbehave == "disk-full":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), destination)
        while chunk := stream.read(CHUNK_BYTES):
            value = zlib.adler32(chunk, value)
            if misbehave == "corrupt" and target.tell() == 0:
                chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
            target.write(chunk)
    return f"{value:08x}"


def write_error(exc: OSError, destination: str) -> str:
    what = exc.strerror or str(exc)
    return f"{what[:1].lower()}{what[1:]} writing {destination}"


def wait_for_gate(gate: Path) -> None:
    """Hold until the gate file exists: the test says when a copy may go on (never, to keep a read going)."""
    deadline = time.monotonic() + HANG_S
    while not gate.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"fake_hsm: the gate {gate} never opened")
        time.sleep(GATE_POLL_S)


def stage(args: argparse.Namespace) -> None:
    tape, batch = args.tape, args.batch or "no-batch"
    tape_dir, disk_root = Path(args.tape_root) / tape, Path(args.disk_root)
    state_dir = Path(args.state_dir or Path(args.tape_root) / STATE_DIR_NAME)
    say({"event": "MOUNTED", "tape": tape, "drive": args.drive})
    for done, request in enumerate(requests()):
        if done == 1 and args.misbehave == "hang-after-first":
            hang(args)
        if done == 1 and args.misbehave == "crash-after-first":
            print("fake_hsm: simulated crash after the first file", file=sys.stderr, flush=True)
            raise SystemExit(CRASH_STATUS)
        key, path = str(request["key"]), str(request["path"])
        if claim(state_dir, batch, key, "started") == "cancelled":
            say({"key": key, "status": "CANCELLED", "reason": "cancelled before it was read"})
            continue
        say({"key": key, "status": "STARTED"})
        if args.file_delay_s:
            time.sleep(args.file_delay_s)
        if args.gate:
            wait_for_gate(Path(args.gate))
        rel = relative(path)
        source = tape_dir / rel if rel is not None else None
        if source is None or not source.is_file():
            say(
                {
                    "key": key,
                    "status": "FAILED",
                    "reason": f"{path} is not on tape {tape}",
                    "retryable": False,
                }
            )
            continue
        assert rel is not None
        destination = request.get("destination")
        if destination is None:
            copy_into(source, disk_root / rel)
            say({"key": key, "status": "STAGED", "bytes": source.stat().st_size})
            continue
        try:
            checksum = write_to(source, str(destination), args.misbehave)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(str(destination))
            say({"key": key, "status": "FAILED", "reason": write_error(exc, str(destination))})
            continue
        say({"key": key, "status": "STAGED", "bytes": source.stat().st_size, "checksum": checksum})
    say({"event": "UNMOUNTED", "tape": tape, "drive": args.drive})


def cancel(args: argparse.Namespace) -> None:
    batch = args.batch or "no-batch"
    state_dir = Path(args.state_dir or Path(args.tape_root) / STATE_DIR_NAME)
    for request in requests():
        key = str(request["key"])
        won = claim(state_dir, batch, key, "cancelled") == "cancelled"
        say({"key": key, "status": "CANCELLED" if won else "IN_PROGRESS"})


def evict(args: argparse.Namespace) -> None:
    """Drop the HSM's own disk copies of the paths (those staged without a destination)."""
    disk_root = Path(args.disk_root)
    for request in requests():
        path = str(request["path"])
        rel = relative(path)
        if rel is not None:
            (disk_root / rel).unlink(missing_ok=True)
        say({"path": path, "status": "EVICTED"})


def drive(args: argparse.Namespace) -> None:
    """Take a drive down or up: record the command in <tape_root>/.drives/<drive> (a drive the fake library
    does not have, one not named fake-drive-<n>, is refused with exit status 2)."""
    name, command = args.drive, args.command
    if not name.startswith("fake-drive-") or command not in ("up", "down_after_mount", "down_now"):
        raise SystemExit(f"fake_hsm: no drive {name!r} or no command {command!r}")
    drives = Path(args.tape_root) / DRIVES_DIR_NAME
    drives.mkdir(exist_ok=True)
    (drives / name).write_text(command)


def health(args: argparse.Namespace) -> None:
    say({"health": args.health, "reason": "fake library"})


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(description="A fake HSM that keeps its tapes in directories.")
    parse.add_argument("operation", choices=OPERATIONS)
    parse.add_argument("--tape-root", required=True)
    parse.add_argument("--disk-root", required=True)
    parse.add_argument("--state-dir", help=f"default: <tape-root>/{STATE_DIR_NAME}")
    parse.add_argument("--tape", help="stage: the tape to read")
    parse.add_argument("--batch", help="stage, cancel: the batch key")
    parse.add_argument("--drive", default="fake-drive-0")
    parse.add_argument("--command", help="drive: up, down_after_mount or down_now")
    parse.add_argument("--file-delay-s", type=float, default=0.0, help="stage: pause before each copy")
    parse.add_argument("--misbehave", choices=MISBEHAVIOURS)
    parse.add_argument("--pid-file", help="hang-with-child: where to write the child's pid")
    parse.add_argument("--gate", help="stage: before each copy, wait until this file exists")
    parse.add_argument(
        "--marker",
        help="append how far the program got to this file: 'started <pid>', 'hanging' (a misbehaviour's hang"
        " has begun), 'finished' (it ended by itself; a killed program never writes it)",
    )
    parse.add_argument("--health", default="ONLINE", choices=("ONLINE", "DEGRADED", "OFFLINE"))
    return parse


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    mark(args, f"started {os.getpid()}")
    try:
        if args.operation == "stage" and not args.tape:
            raise SystemExit("fake_hsm: stage needs --tape")
        if args.misbehave not in ("hang-after-first", "crash-after-first"):
            misbehave_at_start(args)
        operations = {
            "lookup": lookup,
            "stage": stage,
            "cancel": cancel,
            "health": health,
            "evict": evict,
            "drive": drive,
        }
        operations[args.operation](args)
    finally:
        # Also on a crash or exit status of its own; a signal that kills it skips this.
        mark(args, "finished")


if __name__ == "__main__":
    main()
