"""The files a shell command plainly writes, from its words: the paths of ``cp``, ``mv``,
``tee``, ``sed -i``… (and, in ``shell_words``, the targets of ``>`` and ``>>``).

Only for the files that decide what dcode may do (``protected``): writing one from the shell
asks every time, in every mode, as a file tool's write does. This reads what the words show;
a program that writes a path it computes (``python x.py``, ``cd .claude && …``) is the
sandbox's to stop, which mounts those files read-only.
"""

from __future__ import annotations

WRITERS = frozenset(
    {
        "tee",
        "cp",
        "mv",
        "ln",
        "install",
        "rm",
        "rmdir",
        "touch",
        "truncate",
        "chmod",
        "chown",
        "mkdir",
        "rsync",
        "unlink",
        "shred",
    }
)
"""Commands any of whose path arguments they may write (a source of ``cp`` included: copying
a settings file out asks too, a small price for not reading each command's grammar)."""
IN_PLACE = frozenset({"sed", "perl", "ruby"})
"""Commands that write the files they name only with ``-i``."""


def paths_written(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words of the command ``words`` that name a file it may write."""
    name = words[0].rsplit("/", 1)[-1]
    operands = tuple(word for word in words[1:] if not word.startswith("-"))
    if name in WRITERS:
        return tuple(word.split("=", 1)[-1] for word in words[1:] if "=" in word) + operands
    if name in IN_PLACE and any(_in_place(word) for word in words[1:]):
        return operands
    if name == "dd":
        return tuple(word[3:] for word in words[1:] if word.startswith("of="))
    return ()


def _in_place(word: str) -> bool:
    return (
        word == "--in-place"
        or word.startswith("--in-place=")
        or (word.startswith("-") and not word.startswith("--") and "i" in word[1:])
    )
