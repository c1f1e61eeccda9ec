#!/usr/bin/env python3
"""Runs the harness under several TensorFlow versions and merges the reports into one matrix.

For each version: create (or reuse) an isolated virtual environment with that
TensorFlow and its pinned tf-keras and NumPy (harness/matrix/pins.py), install
this checkout into it (--no-deps, editable), run `python -m harness --mode all
--json_out OUT_DIR/VERSION.json`, then merge every report into Markdown, HTML
and JSON. Environments are cached under --cache_dir, keyed by version, pins and
Python version: a second run installs nothing. A version that cannot be
installed is a "not installed" column, not the end of the run.

Usage (from the repository root, with a Python that has NumPy, e.g. the dev venv):
  python scripts/matrix.py --versions 2.16.2,2.21.0 --out_dir /tmp/matrix-run
  python scripts/matrix.py --versions all --out_dir /tmp/matrix-run --markdown_out docs/matrix.md --
  --mode full python scripts/matrix.py --versions 2.16.2,2.21.0 --cases 'seeds.*' --out_dir DIR --
  --timeout 120

Arguments after `--` go to every harness run unchanged.

Exit status: 0 when every version produced a report (whatever its verdicts:
the matrix shows them), 1 when a version was not installed or its run wrote no
report, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing it

from harness import report as report_io  # noqa: E402
from harness.matrix import envs, merge, outputs, pins  # noqa: E402


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    passthrough: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, passthrough = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(
        usage="%(prog)s --versions V1,V2|all --out_dir DIR [options] [-- HARNESS_ARGS...]",
        description=__doc__.split("\n\n")[0],
        epilog="HARNESS_ARGS, after `--`, go to every harness run unchanged, e.g. `-- --mode "
               "full`.\nKnown versions (the pin table): " + ", ".join(pins.versions()) + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", required=True,
                        help="comma list of TensorFlow versions, or all (every version of the pin "
                             "table, listed below)")
    parser.add_argument("--out_dir", required=True, type=Path,
                        help="folder for VERSION.json reports, their logs and the merged outputs "
                             "(created)")
    parser.add_argument("--cases",
                        help="passed to every harness run as --cases (globs on case ids)")
    parser.add_argument("--cache_dir", type=Path, default=envs.DEFAULT_CACHE,
                        help="where the environments are kept between runs (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter environments are made from (default: this one)")
    parser.add_argument("--installer", default="auto", choices=("auto", *envs.INSTALLERS),
                        help="auto: uv when it is on PATH, else venv and pip")
    parser.add_argument("--markdown_out", type=Path, help="default: OUT_DIR/matrix.md")
    parser.add_argument("--html_out", type=Path, help="default: OUT_DIR/matrix.html")
    parser.add_argument("--json_out", type=Path,
                        help="merged JSON (harness.matrix/1); default: OUT_DIR/matrix.json")
    args = parser.parse_args(argv)

    versions = []
    given = pins.versions() if args.versions.strip() == "all" else args.versions.split(",")
    for version in (v.strip() for v in given):
        if version and version not in versions:
            versions.append(version)
    if not versions:
        parser.error("--versions is empty; give a comma list such as 2.16.2,2.21.0")
    for version in versions:
        try:
            pins.requirements(version)
        except pins.PinError as e:
            parser.error(str(e))
    args.versions = versions
    try:
        args.installer = envs.pick_installer(args.installer)
    except ValueError as e:
        parser.error(str(e))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    args.markdown_out = args.markdown_out or args.out_dir / "matrix.md"
    args.html_out = args.html_out or args.out_dir / "matrix.html"
    args.json_out = args.json_out or args.out_dir / "matrix.json"
    for path in (args.markdown_out, args.html_out, args.json_out):
        try:
            report_io.check_writable(str(path))
        except ValueError as e:
            parser.error(str(e))
    return args, passthrough


def _stamp(markdown: Path, argv: list[str]) -> None:
    """Says under the Markdown's heading which command made it, as docs/matrix.md must."""
    lines = markdown.read_text(encoding="utf-8").splitlines(keepends=True)
    shown, skip = [], False
    # where environments are cached and which installer made them do not change results
    for a in argv:
        if skip:
            skip = False
        elif a in ("--cache_dir", "--python", "--installer"):
            skip = True
        elif not a.startswith(("--cache_dir=", "--python=", "--installer=")):
            shown.append(a if " " not in a else repr(a))
    command = " ".join(["python", "scripts/matrix.py", *shown])
    lines[1:1] = ["\n",
                  f"Generated by `{command}` from a real run under each release; do not edit it by "
                  "hand.\n"]
    markdown.write_text("".join(lines), encoding="utf-8")


def say(line: str) -> None:
    print(f"matrix: {line}", flush=True)


def main(argv: list[str]) -> int:
    args, passthrough = parse(argv)
    start = time.monotonic()
    say(f"installer: {args.installer}; environments in {args.cache_dir}")
    reports: list[str] = []
    failed: dict[str, str] = {}
    for version in args.versions:
        report = args.out_dir.resolve() / f"{version}.json"
        report.unlink(missing_ok=True)  # a stale report must not stand in for a run that failed
        try:
            with envs.prepared(version, cache_dir=args.cache_dir, repo=ROOT, python=args.python,
                               installer=args.installer,
                               log=lambda line, v=version: say(f"[{v}] {line}")) as env:
                say(f"[{version}] environment {env.action} in {env.seconds:.1f} s ({env.path})")
                run_start = time.monotonic()
                status = envs.run_harness(env, report, cases=args.cases, extra_args=passthrough,
                                          log_path=args.out_dir / f"{version}.log",
                                          echo=lambda line, v=version: print(f"  [{v}] {line}",
                                                                             flush=True))
                say(f"[{version}] harness exit status {status} in "
                    f"{time.monotonic() - run_start:.1f} s")
        except envs.InstallError as e:
            say(f"[{version}] not installed: {e.reason}")
            failed[version] = e.reason
            continue
        if report.is_file():
            # exit status 1 is a failing verdict: a result, not a broken run
            reports.append(str(report))
        else:
            failed[version] = ("installed, but the harness run wrote no report (exit status "
                               f"{status}); see {args.out_dir / f'{version}.log'}")
            say(f"[{version}] {failed[version]}")
    try:
        outputs.main(reports, markdown_out=str(args.markdown_out), html_out=str(args.html_out),
                   json_out=str(args.json_out), failed=failed)
    except merge.MergeError as e:
        sys.stderr.write(f"matrix: cannot merge: {e}\n")
        return 1
    _stamp(args.markdown_out, argv)
    say(f"wrote {args.markdown_out}, {args.html_out}, {args.json_out}")
    say(f"{len(reports)} of {len(args.versions)} versions ran, installer {args.installer}, "
        f"{time.monotonic() - start:.1f} s in all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
