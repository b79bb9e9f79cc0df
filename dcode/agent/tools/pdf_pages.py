"""Which pages of a PDF one read_file call covers: the ``pages`` argument, checked against the
document, and the ``pages=`` to continue from."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dcode.agent.tools.args import PDF_MAX_PAGES
from dcode.agent.tools.errors import fail
from dcode.agent.tools.spec import READ_FILE

_SPEC = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


@dataclass(frozen=True, slots=True)
class PageRange:
    first: int
    last: int
    """Inclusive, counted from 1."""
    count: int
    """Pages in the document."""

    @property
    def numbers(self) -> range:
        return range(self.first, self.last + 1)

    @property
    def label(self) -> str:
        """``page 3`` or ``pages 1-5``."""
        return (
            f"page {self.first}" if self.first == self.last else f"pages {self.first}-{self.last}"
        )

    def following(self, start: int | None = None) -> str | None:
        """The ``pages`` value that reads on from ``start`` (default: after this range)."""
        first = self.last + 1 if start is None else start
        if first > self.count:
            return None
        last = min(self.count, first + PDF_MAX_PAGES - 1)
        return str(first) if first == last else f"{first}-{last}"

    def continue_hint(self, start: int | None = None) -> str:
        after = self.following(start)
        return f' To continue, call {READ_FILE.name} with pages="{after}".' if after else ""


def select_pages(spec: str | None, count: int, shown: str) -> PageRange:
    """The pages ``spec`` ("3", "1-5", or None for the first ``PDF_MAX_PAGES``) names."""
    name = READ_FILE.name
    if count < 1:
        fail(f"{name}: {shown} has no pages")
    if spec is None or not spec.strip():
        return PageRange(1, min(count, PDF_MAX_PAGES), count)
    match = _SPEC.fullmatch(spec)
    if match is None:
        fail(f'{name}: pages must be a page number or a range like "1-5"; got {spec!r}')
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        fail(f'{name}: pages "{spec}" is not a range of pages (they count from 1, first-last)')
    if first > count:
        fail(
            f"{name}: {shown} has {count} page{'' if count == 1 else 's'}; page {first} does not exist"
        )
    if last > count:
        fail(
            f'{name}: {shown} has {count} pages; pages "{spec}" goes past the end (use "{first}-{count}")'
        )
    if last - first + 1 > PDF_MAX_PAGES:
        fail(
            f"{name}: at most {PDF_MAX_PAGES} pages per call; "
            f'"{spec}" is {last - first + 1} pages (use "{first}-{first + PDF_MAX_PAGES - 1}")'
        )
    return PageRange(first, last, count)
