"""A web page's HTML as Markdown-ish text a model can read, on the standard library's parser.

What is kept: the title (``# Title``, first), headings (``#`` … ``######``), paragraphs and line
breaks, list items (``- ``, indented by nesting), table rows (cells joined by `` | ``), links as
``[text](absolute url)``, images as ``![alt](src)``, inline code in backticks, and ``pre``
blocks verbatim inside fences (with the language when a class names it). What is dropped: the
contents of ``script``, ``style``, ``noscript``, ``svg``, ``template`` and ``head`` (but its
title), comments, and whitespace that HTML would not show (runs collapse to one space, blank
lines to one, outside ``pre``). Entities are decoded by the parser.

The parser is lenient: bad markup is read as text or skipped, and an unclosed tag runs to the
end of the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

SKIPPED = frozenset({"script", "style", "noscript", "svg", "template", "head"})
HEADINGS = {f"h{level}": level for level in range(1, 7)}
PARAGRAPHS = frozenset({"p", "blockquote", "table", "figure", "details", "dl"})
"""Blocks set off by a blank line."""
LINES = frozenset(
    {
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "nav",
        "aside",
        "form",
        "tr",
        "dt",
        "dd",
        "figcaption",
        "summary",
        "caption",
        "address",
        "fieldset",
        "li",
    }
)
"""Blocks that start and end a line."""
LISTS = frozenset({"ul", "ol"})

_SPACE = re.compile(r"\s+")
_LANGUAGE = re.compile(r"^(?:language|lang|highlight(?:-source)?)-([\w+#.-]+)$")
_CONTAINER_LANGUAGE = re.compile(r"^(?:language|highlight(?:-source)?)-([\w+#.-]+)$")
_ANCHOR_MARKS = frozenset({"", "¶", "#", "§", "🔗"})
"""The text of a heading's link to itself (Sphinx's ``¶``): dropped with the link."""
_NO_LANGUAGE = frozenset({"default", "none", "text", "plain", "plaintext", "notranslate"})


@dataclass(slots=True)
class _Text:
    text: str


@dataclass(slots=True)
class _Break:
    lines: int
    """1: a new line; 2: a new paragraph."""


@dataclass(slots=True)
class _Prefix:
    """What the next text starts with (a heading's ``## ``, a list item's ``- ``)."""

    text: str


@dataclass(slots=True)
class _Raw:
    """A fenced block, kept exactly."""

    text: str


_Piece = _Text | _Break | _Prefix | _Raw


@dataclass(slots=True)
class _Open:
    """An element whose end rewrites what was written inside it: a link or inline code."""

    tag: str
    start: int
    href: str = ""


@dataclass(slots=True)
class _Pre:
    chunks: list[str] = field(default_factory=list)
    language: str = ""


class _Converter(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.pieces: list[_Piece] = []
        self.title: str | None = None
        self._title_chunks: list[str] | None = None
        self._skipping: list[str] = []
        self._open: list[_Open] = []
        self._divs: list[
            str
        ] = []  # the language each open div names ("" for none): code blocks inherit it
        self._pre: _Pre | None = None
        self._pre_depth = 0
        self._lists = 0
        self._cells = 0  # cells seen in the current table row

    # -- the parser's callbacks

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if self._title_chunks is not None:
            self._end_title()  # a title left open ends at the next tag
        if tag == "body":
            self._skipping = [
                t for t in self._skipping if t != "head"
            ]  # a head left open ends here
        if tag == "title" and self.title is None and "svg" not in self._skipping:
            self._title_chunks = []
            return
        if tag in SKIPPED:
            self._skipping.append(tag)
            return
        if self._skipping:
            return
        if self._pre is not None:
            self._start_in_pre(tag, _language(attributes.get("class", ""), _LANGUAGE))
            return
        if tag == "div":
            self._divs.append(_language(attributes.get("class", ""), _CONTAINER_LANGUAGE))
        self._start(tag, attributes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title_chunks is not None:
            self._end_title()
            return
        if tag in SKIPPED:
            if tag in self._skipping:
                del self._skipping[len(self._skipping) - 1 - self._skipping[::-1].index(tag)]
            return
        if self._skipping:
            return
        if self._pre is not None:
            self._end_in_pre(tag)
            return
        if tag == "div" and self._divs:
            self._divs.pop()
        self._end(tag)

    def _end_title(self) -> None:
        self.title = _SPACE.sub(" ", "".join(self._title_chunks or ())).strip()
        self._title_chunks = None

    def handle_data(self, data: str) -> None:
        if self._title_chunks is not None:
            self._title_chunks.append(data)
        elif self._skipping:
            return
        elif self._pre is not None:
            self._pre.chunks.append(data)
        else:
            self.pieces.append(_Text(data))

    # -- outside pre

    def _start(self, tag: str, attributes: dict[str, str]) -> None:
        if tag in HEADINGS:
            self.pieces += [_Break(2), _Prefix("#" * HEADINGS[tag] + " ")]
        elif tag == "li":
            self.pieces += [_Break(1), _Prefix("  " * max(0, self._lists - 1) + "- ")]
        elif tag == "br":
            self.pieces.append(_Break(1))
        elif tag == "hr":
            self.pieces += [_Break(2), _Raw("---"), _Break(2)]
        elif tag == "pre":
            self.pieces.append(_Break(2))
            inherited = next((language for language in reversed(self._divs) if language), "")
            self._pre = _Pre(
                language=_language(attributes.get("class", ""), _LANGUAGE) or inherited
            )
            self._pre_depth = 1
        elif tag == "img":
            self._image(attributes)
        elif tag == "a":
            self._open.append(_Open("a", len(self.pieces), attributes.get("href", "").strip()))
        elif tag == "code":
            self._open.append(_Open("code", len(self.pieces)))
        elif tag in ("td", "th"):
            if self._cells:
                self.pieces.append(_Text(" | "))
            self._cells += 1
        elif tag in LISTS:
            self.pieces.append(
                _Break(1 if self._lists else 2)
            )  # a nested list follows its item's line
            self._lists += 1
        elif tag in PARAGRAPHS:
            self.pieces.append(_Break(2))
        elif tag in LINES:
            self.pieces.append(_Break(1))
        if tag == "tr":
            self._cells = 0

    def _end(self, tag: str) -> None:
        if tag in HEADINGS:
            self.pieces.append(_Break(2))
        elif tag in ("a", "code"):
            self._close(tag)
        elif tag in LISTS:
            self._lists = max(0, self._lists - 1)
            self.pieces.append(_Break(1 if self._lists else 2))
        elif tag in PARAGRAPHS:
            self.pieces.append(_Break(2))
        elif tag in LINES:
            self.pieces.append(_Break(1))

    def _image(self, attributes: dict[str, str]) -> None:
        alt = _SPACE.sub(" ", attributes.get("alt", "")).strip()
        if not alt:
            return  # decorative, or nothing to say about it
        src = attributes.get("src", "").strip()
        if not src or src.startswith("data:"):
            self.pieces.append(_Text(f" ![{alt}] "))
        else:
            self.pieces.append(_Text(f" ![{alt}]({self._absolute(src)}) "))

    def _close(self, tag: str) -> None:
        """A link or inline code ends: what was written since it opened becomes its Markdown."""
        index = next(
            (i for i in range(len(self._open) - 1, -1, -1) if self._open[i].tag == tag), None
        )
        if index is None:
            return
        opened = self._open[index]
        del self._open[index:]
        inside = self.pieces[opened.start :]
        if not all(isinstance(piece, _Text) for piece in inside):
            # Blocks inside (a card that is a link): keep them, and say where the link goes.
            if tag == "a" and (url := self._link(opened.href)):
                self.pieces.append(_Text(f" ({url})"))
            return
        raw = "".join(piece.text for piece in inside if isinstance(piece, _Text))
        text = _SPACE.sub(" ", raw).strip()
        if tag == "code":
            if "\n" in raw.strip():  # a block of code outside pre
                self.pieces[opened.start :] = [
                    _Break(2),
                    _Raw(_fenced(raw.strip("\n"), "")),
                    _Break(2),
                ]
            elif text:
                tick = "``" if "`" in text else "`"
                self.pieces[opened.start :] = [
                    _Text(f"{_edge(raw, 0)}{tick}{text}{tick}{_edge(raw, -1)}")
                ]
            return
        url = self._link(opened.href)
        if opened.href.startswith("#") and text in _ANCHOR_MARKS:
            del self.pieces[opened.start :]  # a heading's link to itself
            return
        if not text or not url:
            return  # an empty link (an icon), or one that goes nowhere useful: its text stays as it is
        self.pieces[opened.start :] = [_Text(f"{_edge(raw, 0)}[{text}]({url}){_edge(raw, -1)}")]

    def _link(self, href: str) -> str:
        """The absolute URL of a link worth showing; ``""`` for one within the page or a script."""
        if not href or href.startswith("#") or href.lower().startswith(("javascript:", "data:")):
            return ""
        return self._absolute(href)

    def _absolute(self, url: str) -> str:
        try:
            return urljoin(self.base_url, url)
        except ValueError:
            return url

    # -- inside pre: everything is text, kept as it is

    def _start_in_pre(self, tag: str, language: str) -> None:
        assert self._pre is not None
        if tag == "br":
            self._pre.chunks.append("\n")
        elif tag == "pre":
            self._pre_depth += 1
        elif tag == "code" and language and not self._pre.language:
            self._pre.language = language

    def _end_in_pre(self, tag: str) -> None:
        assert self._pre is not None
        if tag != "pre":
            return
        self._pre_depth -= 1
        if self._pre_depth > 0:
            return
        text = "".join(self._pre.chunks)
        text = text[1:] if text.startswith("\n") else text  # HTML drops the newline after <pre>
        language, self._pre = self._pre.language, None
        if text.strip():
            self.pieces += [_Break(2), _Raw(_fenced(text.rstrip(), language)), _Break(2)]

    def finish(self) -> str:
        self.close()
        if self._title_chunks is not None:
            self._end_title()
        if self._pre is not None:  # a pre left open: what it held is still code
            self._end_in_pre("pre")
        body = _render(self.pieces)
        if self.title:
            return f"# {self.title}\n\n{body}".rstrip() + "\n" if body else f"# {self.title}\n"
        return body + "\n" if body else ""


def _language(classes: str, pattern: re.Pattern[str]) -> str:
    """The language a ``class`` attribute names (``language-python``, Sphinx's
    ``highlight-python``), or ``""``."""
    for name in classes.split():
        match = pattern.match(name)
        if match and match.group(1).lower() not in _NO_LANGUAGE:
            return match.group(1).lower()
    return ""


def _edge(raw: str, end: int) -> str:
    """A space where ``raw`` had whitespace at its start (``end`` 0) or end (-1)."""
    return " " if raw and raw[end].isspace() else ""


def _fenced(code: str, language: str) -> str:
    """``code`` between fences longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code}\n{fence}"


def _render(pieces: list[_Piece]) -> str:
    """The pieces as text: inline runs collapsed, breaks as newlines (a run of breaks counts
    once, as its largest), no break before the first text or after the last."""
    out: list[str] = []
    inline: list[str] = []
    pending = 0
    prefix = ""

    def emit(text: str) -> None:
        nonlocal pending, prefix
        if out:
            out.append("\n" * max(1, pending))
        out.append(prefix + text)
        pending, prefix = 0, ""

    def flush() -> None:
        text = _SPACE.sub(" ", "".join(inline)).strip()
        inline.clear()
        if text:
            emit(text)

    for piece in pieces:
        match piece:
            case _Text(text):
                inline.append(text)
            case _Break(lines):
                flush()
                if not prefix:  # a break between a marker and its text (<li><p>) is the marker's
                    pending = max(pending, lines)
            case _Prefix(text):
                flush()
                pending, prefix = max(pending, 1), text
            case _Raw(text):
                flush()
                if prefix:
                    emit("")
                pending = max(pending, 2)
                emit(text)
                pending = 2
    flush()
    return _tidy("".join(out).split("\n")).strip("\n")


def _tidy(lines: list[str]) -> str:
    """Trailing spaces off and runs of blank lines down to one, except inside fences."""
    kept: list[str] = []
    fence = ""
    for line in lines:
        if fence:
            kept.append(line)
            if line.strip() == fence:
                fence = ""
            continue
        line = line.rstrip()
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fence = "`" * (len(stripped) - len(stripped.lstrip("`")))
        elif not line and kept and not kept[-1]:
            continue
        kept.append(line)
    return "\n".join(kept)


def html_to_text(html: str, base_url: str) -> str:
    """``html`` (a page fetched from ``base_url``, after redirects) as Markdown-ish text; relative
    links and image sources are made absolute against ``base_url``."""
    converter = _Converter(base_url)
    converter.feed(html)
    return converter.finish()
