"""``pages/nav/table.py``, the one page table: every page file has one row and every row a file,
one default page (Home, at the URL root), and the groups keep the table's order."""

from __future__ import annotations

from pathlib import Path

from pages.nav import table
from viz_transformer.classroom import LESSON_PATH, TEACHER_PATH

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_file_has_one_row_and_every_row_a_file():
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))
    assert sorted(entry.file for entry in table.PAGES) == files
    assert len({entry.title for entry in table.PAGES}) == len(table.PAGES)


def test_home_is_the_one_default_page_at_the_url_root():
    assert [entry.stem for entry in table.PAGES if entry.default] == ["home"]
    assert table.BY_STEM["home"].url_path == ""
    assert table.BY_STEM["what_heads_do"].url_path == "what_heads_do"
    assert table.title("decoder_steps") == "Step-by-step decoder"


def test_groups_keep_the_table_order():
    groups = table.groups()
    assert list(groups) == ["", "Class"]
    assert [e.stem for e in groups["Class"]] == ["lesson", "teacher"]
    assert [e for entries in groups.values() for e in entries] == list(table.PAGES)


def test_the_class_links_use_the_tables_url_paths():
    assert table.BY_STEM["lesson"].url_path == LESSON_PATH
    assert table.BY_STEM["teacher"].url_path == TEACHER_PATH
