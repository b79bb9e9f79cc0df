"""A value that runs code when a permissive deserializer rebuilds it: a class it names is
imported and called. A hostile export file carries one inside a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Trap:
    marker: str

    def __post_init__(self) -> None:
        Path(self.marker).write_text("the export's value ran code")
