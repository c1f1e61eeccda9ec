"""No line of the project's Python runs over 100 characters, read as text (nothing is imported).

The test data (tests/data: recorded folders, a project to record, expected files) is left out: its
lines are what it stands for, not code of ours. pyproject.toml gives ruff the same limit, for
editors.
"""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 100
FOLDERS = ("harness", "cases", "tests", "scripts")
LEFT_OUT = (os.path.join(ROOT, "tests", "data"), os.path.join(ROOT, "harness", "cases"))


def lines_over(limit: int, root: str = ROOT, left_out: tuple[str, ...] = LEFT_OUT) -> list[str]:
    """'path:line: length' for each line of the project's .py files longer than `limit`."""
    found = []
    for top in FOLDERS:
        for folder, folders, files in os.walk(os.path.join(root, top)):
            folders[:] = sorted(f for f in folders if f != "__pycache__"
                                and os.path.join(folder, f) not in left_out)
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if len(line.rstrip("\n")) > limit:
                            found.append(f"{os.path.relpath(path, root)}:{number}: "
                                         f"{len(line.rstrip())}")
    return found


def test_no_line_is_over_100_characters():
    over = lines_over(LIMIT)
    assert not over, f"lines over {LIMIT} characters; break them:\n" + "\n".join(over)


def test_a_long_line_is_found_counted_in_characters_and_the_data_left_out(tmp_path):
    (tmp_path / "harness").mkdir()
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "harness" / "a.py").write_text("x = 1\n" + "#" * 101 + "\n", encoding="utf-8")
    # 60 arrows: 60 characters, 180 bytes of UTF-8.
    (tmp_path / "harness" / "b.py").write_text("s = '" + "→" * 60 + "'\n", encoding="utf-8")
    (tmp_path / "tests" / "data" / "c.py").write_text("#" * 200 + "\n", encoding="utf-8")
    left_out = (str(tmp_path / "tests" / "data"),)
    assert lines_over(100, str(tmp_path), left_out) == [os.path.join("harness", "a.py") + ":2: 101"]
