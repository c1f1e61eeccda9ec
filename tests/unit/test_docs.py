"""The README and the pages of docs/ hold together: every relative link in them points at a file
of the checkout (and its anchor, if any, at a heading there), and each hand-written page opens
with its title, the task it serves and a link back to the README. Pure text: no TensorFlow."""

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A page generated from a run says so in its opening lines (scripts/readme_check.py reads the same).
GENERATED = re.compile(r"do not edit it by hand", re.IGNORECASE)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _unfenced(text: str) -> str:
    """The page without its fenced blocks, where `#` starts a comment, not a heading."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _prose(text: str) -> str:
    """The page without its fenced blocks and inline code, where brackets are not links."""
    return re.sub(r"`[^`]*`", "", _unfenced(text))


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation but hyphens and
    underscores dropped, spaces made hyphens."""
    headings = re.findall(r"^#+ (.+)$", _unfenced(path.read_text(encoding="utf-8")), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _links(path: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(path.read_text(encoding="utf-8")))
            if not re.match(r"[a-z]+:", target)]


def _hand_written(path: Path) -> bool:
    return not GENERATED.search("\n".join(path.read_text(encoding="utf-8").splitlines()[:5]))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_at_a_file_and_heading_of_the_checkout(page):
    broken = []
    for target in _links(page):
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        if not where.is_file() or ROOT not in where.parents:
            broken.append(f"{target}: no file {where}")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.relative_to(ROOT)}")
    assert not broken, broken


def test_the_readme_links_to_every_page_of_docs():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in _links(ROOT / "README.md")}
    assert set(PAGES[1:]) <= linked, sorted(p.name for p in set(PAGES[1:]) - linked)


@pytest.mark.parametrize("page", [p for p in PAGES[1:] if _hand_written(p)], ids=lambda p: p.name)
def test_a_hand_written_page_opens_with_its_title_its_task_and_the_way_back(page):
    title, blank, *rest = page.read_text(encoding="utf-8").splitlines()
    assert title.startswith("# ") and blank == "", (title, blank)
    opening = " ".join(rest[:rest.index("")])
    assert "[README](../README.md)" in opening, opening


def test_a_heading_s_anchor_is_the_one_github_gives_it(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# T\n\n## Explore: search for the input where a gradient goes wrong\n\n"
                    "### `repro` and ISSUE.md\n\n```yaml\n# not a heading\n```\n")
    assert _anchors(page) == {"t", "explore-search-for-the-input-where-a-gradient-goes-wrong",
                              "repro-and-issuemd"}
