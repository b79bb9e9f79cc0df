"""Agent definition files for tests: frontmatter and a body, written where a source looks."""

from __future__ import annotations

from pathlib import Path


def agent_file(
    directory: Path, filename: str, frontmatter: str, body: str = "You do the thing.\n"
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}", encoding="utf-8")
    return path
