"""The app's one page table: each page's file, URL path, title and icon, in the order the
navigation lists them. app.py builds its navigation from it, each page takes its title from it,
and the tests and benchmarks read the titles here (plain data: no Streamlit, no PyTorch, so
app.py reads it before anything heavy loads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    """One page: ``stem`` names its file (``pages/<stem>.py``) and, but for the default page,
    its URL path; ``group`` is its heading in the navigation ("" for the first, unnamed one)."""

    stem: str
    title: str
    icon: str
    group: str = ""
    default: bool = False

    @property
    def file(self) -> str:
        """The page's file, relative to the repository root (as ``st.Page`` takes it)."""
        return f"pages/{self.stem}.py"

    @property
    def url_path(self) -> str:
        """The path of the page's link: "" for the default page, else its file's stem."""
        return "" if self.default else self.stem


PAGES: tuple[PageEntry, ...] = (
    PageEntry("home", "Home", ":material/home:", default=True),
    PageEntry("attention_maps", "Attention maps", ":material/grid_on:"),
    PageEntry("positional_encoding", "Positional encoding", ":material/waves:"),
    PageEntry("softmax_saturation", "Softmax saturation", ":material/thermostat:"),
    PageEntry("decoder_steps", "Step-by-step decoder", ":material/steps:"),
    PageEntry("qkv_walkthrough", "Q, K, V walkthrough", ":material/calculate:"),
    PageEntry("what_heads_do", "What heads do", ":material/psychology:"),
    PageEntry("heads_across_corpus", "Heads across a corpus", ":material/dataset:"),
    PageEntry("then_and_now", "2017 vs today", ":material/history:"),
    PageEntry("watch_it_learn", "Watch it learn", ":material/school:"),
    PageEntry("compare_models", "Compare two models", ":material/compare:"),
    # a lesson's steps open the pages above
    PageEntry("lesson", "Lesson", ":material/menu_book:", group="Class"),
    PageEntry("teacher", "Teacher", ":material/co_present:", group="Class"),
)
BY_STEM = {page.stem: page for page in PAGES}


def title(stem: str) -> str:
    """The title of the page in ``pages/<stem>.py`` (a KeyError names an unknown page)."""
    return BY_STEM[stem].title


def groups() -> dict[str, list[PageEntry]]:
    """The pages under each heading of the navigation, in the table's order."""
    out: dict[str, list[PageEntry]] = {}
    for page in PAGES:
        out.setdefault(page.group, []).append(page)
    return out
