"""web_fetch's HTML to text: a realistic docs page (tests/fixtures/docs_page.html, Sphinx-like:
a sidebar, scripts, styles, an icon sprite, headings with self-links, highlighted code, a
table), and the rules one at a time."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.tools.html_text import html_to_text

PAGE = Path(__file__).parent / "fixtures" / "docs_page.html"
BASE = "https://docs.example.org/en/latest/guide/quickstart.html"

EXPECTED = """\
# Quickstart — Tidewater 2.4 documentation

[![Tidewater logo](https://docs.example.org/en/latest/_static/logo.png)](https://docs.example.org/en/latest/index.html)

- Quickstart
- [Configuration](https://docs.example.org/en/latest/guide/config.html)
- Toggle theme

# Quickstart

Tidewater streams tide tables to your terminal. It needs Python 3.11 or newer & a network connection. \
See the [API reference](https://docs.example.org/en/latest/reference/api.html#tidewater.open) for every option.

## Installing

Install it with pip:

```console
$ pip install tidewater
```

Then check the version with `tidewater --version`.

## First steps

- Pick a station from the [station list](https://docs.example.org/en/latest/guide/stations.html).

- Open it:

```python
import tidewater

with tidewater.open("brest") as station:
    for tide in station.next(3):
        print(tide.time, tide.height < 2.5)
```

- Read the heights.
  - High tides are marked HW.
  - Low tides are marked LW.

### Options

Name | Default
`units` | metres
`days` | 7

![A tide chart for Brest](https://docs.example.org/img/tide-chart.png)

© 2024 The Tidewater authors. [License](https://example.org/license)
"""


def convert(html: str, base: str = "https://example.org/a/b.html") -> str:
    return html_to_text(html, base)


def test_a_docs_page_reads_as_markdown() -> None:
    text = html_to_text(PAGE.read_text(encoding="utf-8"), BASE)
    assert text == EXPECTED
    for hidden in (
        "SHOULD NOT APPEAR",
        "ALSO HIDDEN",
        "font-family",
        "Search icon",
        "enable JavaScript",
        "Template text",
        "¶",
        "javascript:",
    ):
        assert hidden not in text, hidden


def test_the_title_comes_first_and_only_the_pages_own() -> None:
    assert (
        convert("<p>body</p><svg><title>an icon</title></svg><title>The page</title>")
        == "# The page\n\nbody\n"
    )
    assert convert("<title>Only a title</title>") == "# Only a title\n"
    assert convert("") == ""


def test_a_head_left_open_ends_at_the_body_and_a_title_at_the_next_tag() -> None:
    html = "<html><head><title>T</title><meta charset=utf-8><body><p>the body</p>"
    assert convert(html) == "# T\n\nthe body\n"
    assert convert("<title>Open title<body><p>still read</p>") == "# Open title\n\nstill read\n"


def test_entities_are_decoded_and_whitespace_collapses() -> None:
    assert convert("<p>a &lt;b&gt; &amp; &#39;c&#x27; caf&eacute;</p>") == "a <b> & 'c' café\n"
    assert (
        convert("<p>  lots   of\n\n  space </p><p></p><p></p><br><br><p>next</p>")
        == "lots of space\n\nnext\n"
    )


def test_links_are_absolute_and_script_links_keep_only_their_text() -> None:
    html = '<p>go <a href="javascript:alert(1)">here</a>, <a href="mailto:x@y.z">mail</a> or <a href="../up?q=1">up</a>.</p>'
    assert convert(html) == "go here, [mail](mailto:x@y.z) or [up](https://example.org/up?q=1).\n"
    assert convert('<p><a href="#top">back to top</a> <a href="/x"></a></p>') == "back to top\n"


def test_a_link_around_blocks_keeps_them_and_says_where_it_goes() -> None:
    assert (
        convert('<a href="/card"><div><h3>Card</h3><p>text</p></div></a>')
        == "### Card\n\ntext\n\n(https://example.org/card)\n"
    )


def test_headings_by_level() -> None:
    assert (
        convert("<h2>A <code>x</code> heading</h2><h6>six</h6>")
        == "## A `x` heading\n\n###### six\n"
    )


def test_pre_is_verbatim_inside_a_fence_longer_than_its_backticks() -> None:
    html = "<pre>\nx = '```'\n  indented\n\n\n\n<b>end</b>   </pre>"
    assert convert(html) == "````\nx = '```'\n  indented\n\n\n\nend\n````\n"


def test_code_with_line_breaks_outside_pre_is_a_block() -> None:
    assert convert("<p>see <code>a\nb</code> here</p>") == "see\n\n```\na\nb\n```\n\nhere\n"


def test_the_language_comes_from_the_class() -> None:
    assert convert('<pre class="lang-rust">fn main() {}</pre>') == "```rust\nfn main() {}\n```\n"
    assert convert('<div class="highlight-none"><pre>plain</pre></div>') == "```\nplain\n```\n"


def test_lists_nest_and_empty_items_vanish() -> None:
    html = "<ul><li></li><li>one<ul><li>inner</li></ul></li><li>two</li></ul><p>after</p>"
    assert convert(html) == "- one\n  - inner\n- two\n\nafter\n"


def test_images_without_alt_are_left_out() -> None:
    html = '<p><img src="a.png"><img src="data:image/png;base64,AAAA" alt="inline"><img src="b.png" alt="B"></p>'
    assert convert(html) == "![inline] ![B](https://example.org/a/b.png)\n"


def test_an_unclosed_script_hides_the_rest() -> None:
    assert convert("<p>shown <script>var hidden = 1;") == "shown\n"
