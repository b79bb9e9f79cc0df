"""The framework internals dcode relies on, checked against the installed versions.

Every private Textual or langchain name dcode uses is listed in a fence module
(``dcode/tui/textual_internals.py``, ``dcode/models/langchain_internals.py``; and
``dcode/server/runtime_internals.py`` for ``langgraph dev``'s in-memory runtime), the only files
that may import or touch one. Here each listed name is looked up in the installed package, with
the shape dcode relies on (a class's bases, a method's parameters, an attribute's type), and a
change fails with the dependency's version, the name and the dcode files that rely on it. A
scan of ``dcode/`` finds any private import or attribute outside the fences, and any name a
dcode widget or model defines that is also the framework's, so that a new use cannot slip in
unlisted. Where a name says too little, the behaviour dcode relies on is checked too.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import io
import signal
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from functools import cache
from importlib.metadata import version
from itertools import chain
from pathlib import Path
from typing import Any

import pytest
from markdown_it.token import Token
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from textual import events
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Markdown, TextArea
from textual.widgets.markdown import MarkdownBlock

from dcode.framework_internals import PrivateUse
from dcode.models import langchain_internals
from dcode.server import runtime_internals
from dcode.tui import textual_internals
from dcode.tui.textual_internals import event_clock

ROOT = Path(__file__).resolve().parents[1]
FENCES: dict[str, tuple[PrivateUse, ...]] = {
    "dcode/tui/textual_internals.py": textual_internals.PRIVATE_USES,
    "dcode/models/langchain_internals.py": langchain_internals.PRIVATE_USES,
    "dcode/server/runtime_internals.py": runtime_internals.PRIVATE_USES,
}
USES = [use for uses in FENCES.values() for use in uses]
FRAMEWORKS = ("textual", "rich", "langchain", "langchain_core", "langchain_openai", "langgraph")
# Whose private imports and attributes the scan looks for: the frameworks and what they stand on.
SCANNED = (*FRAMEWORKS, "markdown_it", "openai", "httpx")
# Underscored names that are documented API (namedtuple's), read off objects of unknown origin.
DOCUMENTED = frozenset({"_asdict", "_field_defaults", "_fields", "_make", "_replace"})
MISSING = object()

# What an attribute that instances carry is looked for on, by its owner.
SAMPLES: dict[str, Callable[[], object]] = {
    "textual.widgets.markdown:MarkdownBlock": lambda: MarkdownBlock(
        Markdown(), Token("paragraph_open", "p", 1)
    ),
    "textual.widgets._markdown:MarkdownListItem": lambda: textual_internals.MarkdownListItem(
        Markdown(), Token("list_item_open", "li", 1), "• "
    ),
    "textual.widgets:TextArea": TextArea,
    "textual.widget:Widget": Widget,
    "textual.screen:Screen": Screen,
}


# --- checking one listed name


def load(dotted: str) -> Any:
    """``"module:Qualified.name"`` to the object."""
    module, _, qualname = dotted.partition(":")
    found: Any = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        found = getattr(found, part)
    return found


def problems(use: PrivateUse) -> list[str]:
    """What no longer holds of ``use`` in the installed package; empty when all of it does."""
    try:
        owner: Any = importlib.import_module(use.module)
    except ImportError as exc:
        return [f"module {use.module} is gone ({exc})"]
    where = use.module
    for part in filter(None, use.owner.split(".")):
        owner = getattr(owner, part, MISSING)
        if owner is MISSING:
            return [f"{where} has no {part}"]
        where = part
    if use.instance:
        make = SAMPLES.get(f"{use.module}:{use.owner}")
        if make is None:
            return [
                f"the contract test has no sample {use.owner} to look for .{use.attribute} on (add one to SAMPLES)"
            ]
        value = getattr(make(), use.attribute, MISSING)
        if value is MISSING:
            return [f"a new {use.owner} has no attribute {use.attribute}"]
        expected = load(use.value_type) if use.value_type else object
        if not isinstance(value, expected):
            return [
                f"{use.attribute} holds a {type(value).__qualname__}, not a {expected.__qualname__}"
            ]
        return []
    value = getattr(owner, use.attribute, MISSING)
    if value is MISSING:
        return [f"{where} has no attribute {use.attribute}"]
    found = []
    if use.parameters is not None:
        try:
            parameters = inspect.signature(value).parameters.values()
        except (TypeError, ValueError) as exc:
            return [f"its signature cannot be read ({exc})"]
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        names = tuple(parameter.name for parameter in parameters if parameter.kind not in variadic)
        if names != use.parameters:
            found.append(
                f"its parameters are ({', '.join(names)}), dcode's are ({', '.join(use.parameters)})"
            )
    for base in use.bases:
        if not (isinstance(value, type) and issubclass(value, load(base))):
            found.append(f"it no longer derives from {base.replace(':', '.')}")
    return found


def report(use: PrivateUse) -> str:
    """One line per change: ``textual 9.1 changed MarkdownBlock._update_from_block
    (dcode/tui/transcript/table_block.py relies on it): …``; "" when nothing changed."""
    found = problems(use)
    if not found:
        return ""
    who = f"{', '.join(use.users)} {'relies' if len(use.users) == 1 else 'rely'} on it"
    return f"{use.distribution} {version(use.distribution)} changed {use.qualname} ({who}): {'; '.join(found)}"


@pytest.mark.parametrize("use", USES, ids=lambda use: use.target)
def test_every_listed_private_still_has_the_shape_dcode_relies_on(use: PrivateUse) -> None:
    assert not report(use), report(use)


def test_a_renamed_or_reshaped_private_fails_saying_who_relies_on_it() -> None:
    """The check itself: each kind of change is caught and named."""
    hook = next(use for use in USES if use.target.endswith("MarkdownBlock._update_from_block"))
    renamed = dataclasses.replace(
        hook, target=hook.target.replace("_update_from_block", "_update_from_blok")
    )
    reshaped = dataclasses.replace(hook, parameters=("self", "block", "markdown"))
    table = next(use for use in USES if use.target.endswith(":MarkdownTable"))
    rebased = dataclasses.replace(table, bases=("textual.widgets:TextArea",))
    gone = dataclasses.replace(table, target="textual.widgets._markdown_blocks:MarkdownTable")
    untyped = next(use for use in USES if use.target.endswith("MarkdownBlock._blocks"))
    retyped = dataclasses.replace(untyped, value_type="builtins:dict")
    textual = version("textual")
    assert report(renamed).startswith(
        f"textual {textual} changed MarkdownBlock._update_from_blok "
        "(dcode/tui/transcript/table_block.py, dcode/tui/transcript/list_block.py rely on it): "
    )
    assert "its parameters are (self, block), dcode's are (self, block, markdown)" in report(
        reshaped
    )
    assert "no longer derives from textual.widgets.TextArea" in report(rebased)
    assert "module textual.widgets._markdown_blocks is gone" in report(gone)
    assert "_blocks holds a list, not a dict" in report(retyped)
    assert report(hook) == ""


def test_the_listed_users_and_tests_exist() -> None:
    """A fence names the files that rely on each private and the tests that exercise them:
    a renamed test or file must not leave the list pointing at nothing."""
    missing = []
    for use in USES:
        missing += [
            f"{use.target}: no file {user}" for user in use.users if not (ROOT / user).is_file()
        ]
        for test in use.tests:
            path, _, name = test.partition("::")
            file = ROOT / path
            defined = (
                {
                    node.name
                    for node in ast.parse(file.read_text()).body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
                if file.is_file()
                else set()
            )
            if name not in defined:
                missing.append(f"{use.target}: no test {test}")
    assert not missing, "\n".join(missing)


def test_dependencies_whose_privates_dcode_uses_have_an_upper_bound() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    listed = [*project["dependencies"], *chain(*project["optional-dependencies"].values())]
    requirements = {canonicalize_name(r.name): r for r in map(Requirement, listed)}
    unbounded = []
    for distribution in sorted({use.distribution for use in USES}):
        requirement = requirements.get(canonicalize_name(distribution))
        if requirement is None:
            unbounded.append(f"{distribution} is not a dependency in pyproject.toml")
        elif not any(spec.operator in {"<", "<=", "~=", "=="} for spec in requirement.specifier):
            unbounded.append(
                f"{requirement} has no upper bound, yet dcode relies on its private names"
            )
        elif version(distribution) not in requirement.specifier:
            unbounded.append(
                f"{distribution} {version(distribution)} is installed, outside {requirement}"
            )
    assert not unbounded, "\n".join(unbounded)


# --- private names used outside the fences


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_module(dotted: str) -> bool:
    """``textual._time`` or ``textual.widgets._markdown``; not a top-level ``_thread``."""
    return any(private(part) for part in dotted.split(".")[1:])


def dcode_sources() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "dcode").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text()


def defined_privates(sources: list[str]) -> set[str]:
    """The underscored names dcode gives its own things: functions, classes, variables and the
    attributes it sets on ``self`` or ``cls``."""
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            match node:
                case (
                    ast.FunctionDef(name=name)
                    | ast.AsyncFunctionDef(name=name)
                    | ast.ClassDef(name=name)
                ):
                    names.add(name)
                case ast.Name(id=name, ctx=ast.Store()) | ast.arg(arg=name):
                    names.add(name)
                case ast.Attribute(value=ast.Name(id="self" | "cls"), attr=name, ctx=ast.Store()):
                    names.add(name)
    return {name for name in names if private(name)}


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def stray_private_uses(source: str, path: str, defined: set[str]) -> list[str]:
    """Private names of the frameworks that ``source`` imports or touches: a private module, an
    imported underscored name, an underscored attribute of something imported from them, or
    one that dcode never defines (so it is some package's) read off any object but ``self``.
    The standard library's (``os._exit``) are not looked for."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    imported: dict[str, str] = {}  # a name bound by an import from another package: that package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                package = alias.name.split(".")[0]
                if package != "dcode":
                    imported[alias.asname or package] = package
                    if package in SCANNED and private_module(alias.name):
                        found.append((node.lineno, f"imports {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package = node.module.split(".")[0]
            if package in {"dcode", "__future__"}:
                continue
            imported.update((alias.asname or alias.name, package) for alias in node.names)
            if package not in SCANNED:
                continue
            if private_module(node.module):
                found.append((node.lineno, f"imports from {node.module}"))
            found += [
                (node.lineno, f"imports {node.module}.{alias.name}")
                for alias in node.names
                if private(alias.name)
            ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value
            if (package := imported.get(root_name(owner) or "")) is not None:
                if package in SCANNED:
                    found.append((node.lineno, f"uses {ast.unparse(node)}"))
            elif isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
                continue  # dcode's own, or a framework's checked by the override test below
            elif (
                isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            ):
                continue
            elif node.attr not in defined and node.attr not in DOCUMENTED:
                found.append((node.lineno, f"uses {ast.unparse(node)}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
            and node.args[1].value not in defined
        ):
            found.append((node.lineno, f"uses {ast.unparse(node)}"))
    return [f"{path}:{line}: {what}" for line, what in sorted(found)]


def test_no_private_framework_name_is_used_outside_the_fences() -> None:
    sources = dict(dcode_sources())
    defined = defined_privates(list(sources.values()))
    stray = [
        line
        for path, source in sources.items()
        if path not in FENCES
        for line in stray_private_uses(source, path, defined)
    ]
    assert not stray, (
        "private names of other packages outside the fence modules; move each into "
        f"{' or '.join(FENCES)} and list it in PRIVATE_USES:\n" + "\n".join(stray)
    )


def test_the_scan_finds_each_kind_of_private_use() -> None:
    source = textwrap.dedent(
        """
        import os
        import textual._time
        from textual._compositor import Compositor
        from textual.widgets import _markdown
        from textual.widgets.markdown import MarkdownBlock

        class Mine:
            def __init__(self):
                self._own = 1

            def use(self, block):
                MarkdownBlock._update_from_block(self, block)
                textual._time.get_time()
                getattr(block, "_anchor_released")
                super()._inherited()
                os._exit(point._replace(x=1)._asdict())
                return block._blocks, self._own, self._theirs, other._own
        """
    )
    found = stray_private_uses(source, "dcode/x.py", defined_privates([source]))
    assert [line.split(": ", 1)[1] for line in found] == [
        "imports textual._time",
        "imports from textual._compositor",
        "imports textual.widgets._markdown",
        "uses MarkdownBlock._update_from_block",
        "uses textual._time",
        "uses getattr(block, '_anchor_released')",
        "uses block._blocks",
    ]


# --- dcode's names on framework classes


def dcode_modules() -> Iterator[Any]:
    for path, _ in dcode_sources():
        name = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        yield importlib.import_module(name)


def on_a_framework(cls: type) -> bool:
    return any(base.__module__.split(".")[0] in FRAMEWORKS for base in cls.__mro__[1:])


def dcode_classes_on_frameworks() -> list[type]:
    return [
        value
        for module in dcode_modules()
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and on_a_framework(value)
    ]


@cache
def class_syntax(cls: type) -> ast.ClassDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(node, ast.ClassDef)
    return node


VERBS = ("defines", "assigns", "sets", "reads")  # strongest first


@cache
def names_used(cls: type) -> dict[str, tuple[str, ...]]:
    """How ``cls``'s own source uses each name: its body defines (a method, a nested class)
    or assigns it, or its methods set or read it on ``self``."""
    syntax = class_syntax(cls)
    used: dict[str, set[str]] = {}
    for statement in syntax.body:
        match statement:
            case (
                ast.FunctionDef(name=name)
                | ast.AsyncFunctionDef(name=name)
                | ast.ClassDef(name=name)
            ):
                used.setdefault(name, set()).add("defines")
            case ast.Assign(targets=targets):
                for target in targets:
                    if isinstance(target, ast.Name):
                        used.setdefault(target.id, set()).add("assigns")
            case ast.AnnAssign(target=ast.Name(id=name)):
                used.setdefault(name, set()).add("assigns")
    for node in ast.walk(syntax):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            used.setdefault(node.attr, set()).add(
                "sets" if isinstance(node.ctx, ast.Store) else "reads"
            )
    return {name: tuple(verb for verb in VERBS if verb in hows) for name, hows in used.items()}


@cache
def framework_names(base: type) -> frozenset[str]:
    """What a framework class defines: its class attributes and what its methods set on self."""
    names = set(vars(base))
    try:
        syntax = class_syntax(base)
    except (OSError, TypeError):
        return frozenset(names)
    for node in ast.walk(syntax):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return frozenset(names)


def listed(cls: type, name: str, user: str) -> bool:
    """Whether a fence lists ``name`` of one of ``cls``'s framework bases as relied on by ``user``."""
    for use in USES:
        if use.attribute == name and user in use.users:
            owner = load(f"{use.module}:{use.owner}")
            if owner in cls.__mro__:
                return True
    return False


def source_file(cls: type) -> str:
    return Path(inspect.getfile(cls)).resolve().relative_to(ROOT).as_posix()


def collisions(cls: type) -> list[str]:
    """Names dcode's part of ``cls`` shares with its framework part. A private one is either an
    override the fence lists, or a mistake: dcode's own name clashing with the framework's (a
    bool set as ``_animate`` replaced Textual's animator), or the framework's read or set
    through ``self`` rather than through the fence. A public method of the framework must not
    be hidden by an attribute of the same name."""
    frameworks = [base for base in cls.__mro__ if base.__module__.split(".")[0] in FRAMEWORKS]
    found = []
    for part in (
        base for base in cls.__mro__ if base.__module__.split(".")[0] in {"dcode", "tests"}
    ):
        user = source_file(part)
        for name, hows in names_used(part).items():
            owner = next((base for base in frameworks if name in framework_names(base)), None)
            if owner is None:
                continue
            theirs = f"{owner.__module__}.{owner.__qualname__}.{name}"
            if private(name) and "defines" not in hows:
                found.append(
                    f"{user}: {part.__qualname__} {hows[0]} {name}, which is also {theirs}: rename it if it is "
                    "dcode's own, or reach the framework's through the fence module"
                )
            elif private(name) and not listed(cls, name, user):
                found.append(
                    f"{user}: {part.__qualname__} overrides {theirs}: list it in the fence's PRIVATE_USES"
                )
            elif (
                not private(name)
                and {"sets", "assigns"} & set(hows)
                and inspect.isfunction(vars(owner).get(name))
            ):
                found.append(
                    f"{user}: {part.__qualname__} {'sets self.' if 'sets' in hows else 'assigns '}{name}, hiding the method {theirs}"
                )
    return found


def test_dcode_names_on_framework_classes_are_its_own_or_listed() -> None:
    classes = dcode_classes_on_frameworks()
    assert len(classes) > 20  # the scan sees the widgets and the model
    found = [line for cls in classes for line in collisions(cls)]
    assert not found, "\n".join(dict.fromkeys(found))


class Shadowing(Widget):
    """What the check above must catch (never mounted)."""

    def __init__(self) -> None:
        super().__init__()
        self._animate = False
        self.batch = 3

    def _on_key(self, event: events.Key) -> None:
        pass


def test_the_name_check_finds_shadowing_and_unlisted_overrides() -> None:
    found = collisions(Shadowing)
    assert any(
        "Shadowing sets _animate, which is also textual.widget.Widget._animate" in line
        for line in found
    ), found
    assert any(
        "Shadowing sets self.batch, hiding the method textual.widget.Widget.batch" in line
        for line in found
    ), found
    assert any(
        "Shadowing overrides textual." in line and "._on_key: list it" in line for line in found
    ), found
    assert len(found) == 3, found


# --- behaviour behind the names


async def test_key_events_are_stamped_with_the_event_clock() -> None:
    """Burst detection compares a key's ``time`` with ``event_clock()``."""
    before = event_clock()
    key = events.Key("a", "a")
    after = event_clock()
    assert before <= key.time <= after


async def test_the_terminal_driver_draws_on_the_stderr_it_finds_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dcode points file descriptor 2 at a log while the app runs and hands Textual a duplicate
    of the terminal as ``sys.__stderr__``; the driver must draw on that, not on descriptor 2."""
    if sys.platform == "win32":
        pytest.skip("the Linux and macOS driver")
    from textual.drivers.linux_driver import LinuxDriver

    terminal = io.StringIO()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTSTP, signal.SIGCONT)}
    monkeypatch.setattr(sys, "__stderr__", terminal)
    try:
        driver = LinuxDriver(App(), debug=False, mouse=False, size=(80, 24))
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert driver._file is terminal


class PromptHost(App[None]):
    def __init__(self, home: Path, workspace: Path) -> None:
        super().__init__()
        self.home = home
        self.workspace = workspace

    def compose(self) -> ComposeResult:
        from dcode.tui.widgets import PromptInput

        yield PromptInput(self.home / "history.jsonl", self.workspace, id="prompt")


def token_style(area: TextArea, label: str) -> str:
    for segment in area.render_line(0):
        if segment.text == label:
            return str(segment.style)
    raise AssertionError(
        f"{label!r} is not one segment of {[segment.text for segment in area.render_line(0)]}"
    )


async def test_a_placeholder_token_is_drawn_in_its_style_and_follows_the_theme(
    tmp_path: Path,
) -> None:
    """The prompt highlights a token through TextArea's highlight map and theme: drawn in the
    ``prompt-area--token`` style, again after the app's theme and the editor's theme change."""
    from dcode.tui.widgets import PromptInput

    workspace = tmp_path / "ws"
    workspace.mkdir()
    app = PromptHost(tmp_path / "home", workspace)
    async with app.run_test() as pilot:
        area = app.query_one(PromptInput).area
        area.post_message(events.Paste("\n".join(f"line {n}" for n in range(40))))
        await pilot.pause()
        label = "[Pasted text #1 +40 lines]"
        assert area.text == label

        def wanted() -> str:
            return str(area.get_component_rich_style("prompt-area--token"))

        first = wanted()
        assert "bold" in first and token_style(area, label) == first
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.pause()
        assert wanted() != first and token_style(area, label) == wanted()
        area.theme = "monokai"
        await pilot.pause()
        assert "bold" in token_style(area, label) and token_style(area, label) == wanted()


async def test_dragging_or_clicking_the_transcripts_scrollbar_scrolls_it() -> None:
    """A click on the scrollbar's track is an animated scroll, which calls the widget's
    ``animate``; the transcript used to hide that method under a flag of the same name."""
    from dcode.tui.transcript.view import Transcript

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield Transcript(animate=False, id="transcript")

    app = Host()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        for number in range(80):
            await transcript.notice(f"line {number}")
        transcript.anchor()
        await pilot.pause()
        bottom = transcript.scroll_y
        assert bottom > 0
        await pilot.click(transcript.vertical_scrollbar, offset=(0, 0))
        await pilot.pause(0.3)
        assert transcript.scroll_y < bottom


async def test_kept_reasoning_is_never_sent_back(server, make_settings) -> None:
    """``DcodeChatOpenAI`` keeps streamed ``reasoning_content`` in the message's
    ``additional_kwargs``; langchain-openai must still leave it out of the next request
    (DeepSeek refuses a request that sends it back)."""
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import ReasoningDelta
    from tests.support.model_server import reply

    server.script(reply("Four.", reasoning="Two and two make four."), reply("Five."))
    async with await Engine.open(make_settings("chat")) as engine:
        runner = engine.runner(HeadlessApprover())
        first = [event async for event in runner.run_turn("two and two?")]
        assert (
            "".join(event.text for event in first if isinstance(event, ReasoningDelta))
            == "Two and two make four."
        )
        [event async for event in runner.run_turn("and three?")]
    answer = next(
        message for message in server.requests[1].messages if message.get("role") == "assistant"
    )
    assert answer["content"] == "Four."
    assert "reasoning_content" not in answer and "make four" not in str(server.requests[1].body)
