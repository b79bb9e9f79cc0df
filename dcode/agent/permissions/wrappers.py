"""The command a wrapper runs: ``timeout 5 rm -rf ~`` runs ``rm -rf ~``.

Without this a ``deny`` rule for ``Bash(rm -rf:*)`` would not see ``nice rm -rf ~``,
``exec rm -rf ~`` or ``find . -exec rm -rf {} +``, and in ``all`` mode they would run. Two
kinds of wrapper:

* transparent ones (``timeout``, ``nice``, ``nohup``, ``time``, ``stdbuf``, ``ionice``,
  ``setsid``, ``env``) only change how the inner command runs: the inner command is what an
  allow rule must cover (``Bash(npm test:*)`` covers ``timeout 60 npm test``), and the line as
  written is still shown to deny and ask rules;
* the others (``sudo``, ``doas``, ``xargs``, ``find -exec``, ``command``, ``exec``,
  ``builtin``) do more than that: both the wrapper's words and the inner command are commands
  of the line, so an allow rule must cover each.

Options are skipped by what each wrapper documents as taking a value; a wrapper whose command
cannot be found (``command -v rm``, ``sudo -l``) has none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Wrapper:
    takes_value: frozenset[str]
    """Options followed by a value in the next word (``-n`` of ``nice -n 5``, ``--signal``)."""
    operands: int = 0
    """Words between the options and the command (``timeout``'s duration)."""
    transparent: bool = True
    stops: frozenset[str] = frozenset()
    """Options after which no command follows (``command -v``, ``sudo -l``)."""
    splits: bool = False
    """``-S``/``--split-string`` gives a command line as one word (``env``)."""


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "timeout": Wrapper(_opts("-s", "-k", "--signal", "--kill-after"), operands=1),
    "nice": Wrapper(_opts("-n", "--adjustment")),
    "nohup": Wrapper(_opts()),
    "time": Wrapper(_opts("-f", "-o", "--format", "--output")),
    "stdbuf": Wrapper(_opts("-i", "-o", "-e", "--input", "--output", "--error")),
    "ionice": Wrapper(_opts("-c", "-n", "-p", "-P", "-u", "--class", "--classdata")),
    "setsid": Wrapper(_opts()),
    "env": Wrapper(_opts("-u", "-C", "--unset", "--chdir"), splits=True),
    "sudo": Wrapper(
        _opts("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"),
        transparent=False,
        stops=_opts("-l", "-v", "-k", "-K", "-e", "-V", "--list", "--validate", "--edit"),
    ),
    "doas": Wrapper(_opts("-u", "-C"), transparent=False),
    "xargs": Wrapper(
        _opts("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter"),
        transparent=False,
    ),
    "command": Wrapper(_opts(), transparent=False, stops=_opts("-v", "-V")),
    "exec": Wrapper(_opts("-a"), transparent=False),
    "builtin": Wrapper(_opts(), transparent=False),
    "coproc": Wrapper(_opts(), transparent=False),
}
FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True, slots=True)
class Unwrapped:
    inner: tuple[tuple[str, ...], ...]
    """The commands the wrapper runs (``find`` may run several)."""
    transparent: bool
    script: str | None = None
    """A command line the wrapper reads as text (``env -S``), for the caller to parse."""
    assignments: tuple[str, ...] = ()
    """``NAME`` of each ``NAME=value`` that ``env`` sets before the command."""


def unwrap(name: str, words: tuple[str, ...]) -> Unwrapped | None:
    """What the command ``words`` (named ``name``, without its directory) runs inside, or None
    when it is no wrapper, or one with nothing to run."""
    if name == "find":
        found = _find_actions(words)
        return Unwrapped(found, transparent=False) if found else None
    wrapper = WRAPPERS.get(name)
    if wrapper is None:
        return None
    index, script = _skip_options(wrapper, words)
    if index is None:
        return None
    if script is not None:
        return Unwrapped((), wrapper.transparent, script=script)
    assignments: list[str] = []
    if name == "env":
        while index < len(words) and "=" in words[index] and not words[index].startswith("="):
            assignments.append(words[index].split("=", 1)[0])
            index += 1
    index += wrapper.operands
    if index >= len(words):
        return None
    return Unwrapped((words[index:],), wrapper.transparent, assignments=tuple(assignments))


def _skip_options(wrapper: Wrapper, words: tuple[str, ...]) -> tuple[int | None, str | None]:
    """(the index of the first word after the options, or None when no command follows;
    ``env -S``'s command line)."""
    index = 1
    while index < len(words) and words[index].startswith("-") and words[index] != "-":
        word = words[index]
        if word == "--":
            return index + 1, None
        if word.startswith("--"):
            option, has_value, value = word.partition("=")
            if option in wrapper.stops:
                return None, None
            if wrapper.splits and option == "--split-string":
                return index, value if has_value else _next(words, index)
            index += 2 if option in wrapper.takes_value and not has_value else 1
            continue
        taken, script = _short_cluster(wrapper, words, index)
        if taken is None:
            return None, None
        if script is not None:
            return index, script
        index += taken
    return index, None


def _short_cluster(
    wrapper: Wrapper, words: tuple[str, ...], index: int
) -> tuple[int | None, str | None]:
    """``-nv5``: (how many words the cluster takes, or None when no command follows; the
    command line of ``env -S``)."""
    word = words[index]
    for at, letter in enumerate(word[1:], start=2):
        option = f"-{letter}"
        rest = word[at:]
        if option in wrapper.stops:
            return None, None
        if wrapper.splits and option == "-S":
            return 1, rest or _next(words, index)
        if option in wrapper.takes_value:
            return (1 if rest else 2), None
    return 1, None


def _next(words: tuple[str, ...], index: int) -> str:
    return words[index + 1] if index + 1 < len(words) else ""


def _find_actions(words: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The commands of ``find``'s ``-exec CMD… ;`` (``-execdir``, ``-ok``, ``+``)."""
    found: list[tuple[str, ...]] = []
    index = 1
    while index < len(words):
        if words[index] in FIND_ACTIONS:
            end = index + 1
            while end < len(words) and words[end] not in (";", "+"):
                end += 1
            if end > index + 1:
                found.append(words[index + 1 : end])
            index = end
        index += 1
    return tuple(found)
