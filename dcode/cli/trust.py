"""``dcode trust [PATH]``, ``--revoke`` and ``--list``: project trust without the TUI.

Headless runs never trust a project on their own, so this is how a user who only runs
``dcode -p`` lets a project's ``.dcode/config.toml`` apply in full, and its agents choose their
models.
"""

from __future__ import annotations

import time
from pathlib import Path

from dcode.settings.config import ConfigError, Settings, dcode_home, load_settings
from dcode.settings.project_gate import ignored_keys
from dcode.settings.trust import (
    AGENT_DIRS,
    CLAUDE_SETTINGS,
    TRUST_FILES,
    ProjectFiles,
    TrustState,
    TrustStore,
)


def trust_project(root: Path) -> str:
    """Trust ``root`` as it is now; raises ConfigError for a missing directory or a bad config.

    The trust covers every trust file (the config and the agent definitions), so a project
    with agents but no config can be trusted too."""
    settings = _settings_for(root)
    files = ProjectFiles.read(settings.workspace)
    store = TrustStore(settings.home)
    state = store.state(files)
    if state is TrustState.NONE:
        return f"{settings.workspace} has nothing to trust (no {' or '.join(TRUST_FILES)})."
    if state is TrustState.TRUSTED:
        return f"{settings.workspace} is already trusted."
    store.trust(settings.workspace, files.digest)
    config = settings.project_config.relative_to(settings.workspace).as_posix()
    present = _present(files)
    said = []
    if config in present:
        applied = ignored_keys(settings)
        said.append(
            f"its {config} applies in full" + (f" (now applied: {applied})" if applied else "")
        )
    if rules := [name for name in present if name in CLAUDE_SETTINGS]:
        said.append(f"the allow rules of {' and '.join(rules)} apply")
    if hooks := len(settings.skipped_hooks):
        said.append(f"its hooks ({hooks}) run")
    if agents := [name for name in present if name in AGENT_DIRS]:
        said.append(f"the agents in {' and '.join(agents)} may choose their models")
    return (
        f"Trusted {settings.workspace}: {'; '.join(said)}. "
        "dcode asks again if these files change; `dcode trust --revoke` undoes it."
    )


def _present(files: ProjectFiles) -> list[str]:
    """The trust files and directories ``files`` holds something of, in TRUST_FILES order."""
    return [
        name
        for name in TRUST_FILES
        if any(path == name or path.startswith(name + "/") for path in files.contents)
    ]


def revoke_project(root: Path) -> str:
    home = dcode_home()
    root = root.expanduser().resolve()
    if TrustStore(home).revoke(root):
        return f"{root} is no longer trusted."
    return f"{root} was not trusted."


def list_projects() -> str:
    store = TrustStore(dcode_home())
    entries = sorted(store.entries().values(), key=lambda e: e.path)
    if not entries:
        return "No trusted projects."
    lines = []
    for entry in entries:
        root = Path(entry.path)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.trusted_at))
        lines.append(f"{entry.path}  trusted {when}{_status(root, entry.digest)}")
    return "\n".join(lines)


def _status(root: Path, digest: str) -> str:
    if not root.is_dir():
        return "  (missing)"
    try:
        files = ProjectFiles.read(root)
    except OSError:
        return "  (unreadable)"
    return "" if files.digest == digest else "  (changed since: asked again)"


def _settings_for(root: Path) -> Settings:
    root = root.expanduser()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory")
    return load_settings(workspace=root)
