"""What to tell someone who attaches media their model will not see, and what a guessed profile
means, in the words ``/model``, ``dcode doctor``, the prompt and ``dcode -p`` share.

A model nobody describes (no langchain profile, no preset, no server that says, no config) runs
on the fallback profile, which takes no images. Its images then go as text placeholders, which
is right for a text-only model and a surprise for a vision model: so the moment something is
attached, one line says so, names the setting that changes it, and says whether that "no" was
known or guessed. Light: no langchain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dcode.media.modality import media_part
from dcode.models.profiles import ModelProfile

INPUT_FIELDS: dict[str, str] = {
    "image": "image_inputs",
    "audio": "audio_inputs",
    "video": "video_inputs",
    "pdf": "pdf_inputs",
}
"""The profile field that says whether a model takes each kind of media."""

_NOUNS: dict[str, str] = {"image": "images", "audio": "audio", "video": "videos", "pdf": "PDFs"}

GUESSED_MARK = "⚠"


def setting_hint(spec: str, field: str, config_file: Path) -> str:
    """``set image_inputs = true under [models."spec"] in PATH``."""
    return f'set {field} = true under [models."{spec}"] in {config_file}'


@dataclass(frozen=True, slots=True)
class MediaSupport:
    """One model's profile, and the config file where its profile is set."""

    spec: str
    profile: ModelProfile
    config_file: Path

    def unseen(self, modality: str, attached: str) -> str | None:
        """The line to show when ``attached`` (``[image 1]``, ``shot.png``) is media of
        ``modality`` that the profile does not take; None when it takes it."""
        field = INPUT_FIELDS[modality]
        if getattr(self.profile, field):
            return None
        noun = _NOUNS[modality]
        if field in self.profile.guessed or self.profile.source == "fallback":
            start = f"dcode does not know whether {self.spec} takes {noun} (its profile is guessed)"
        else:
            start = f"{self.spec} takes no {noun} (so says its profile, from {self.profile.source})"
        hint = setting_hint(self.spec, field, self.config_file)
        return f"{start}, so {attached} will reach it as a text placeholder. If it does take {noun}, {hint}."

    def unseen_in(self, blocks: Iterable[object]) -> list[str]:
        """A line for each kind of media among ``blocks`` (a prompt's) that the model does not take."""
        names: dict[str, list[str]] = {}
        for block in blocks:
            part = media_part(block)
            if (
                part is not None
                and part.modality in INPUT_FIELDS
                and part.name not in names.setdefault(part.modality, [])
            ):
                names[part.modality].append(part.name)
        lines = (self.unseen(modality, listed(found)) for modality, found in names.items())
        return [line for line in lines if line]


def listed(names: list[str], most: int = 3) -> str:
    """``a.png``, ``a.png and b.png``, ``a.png, b.png, c.png and 2 more``."""
    if len(names) > most:
        return f"{', '.join(names[:most])} and {len(names) - most} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def guessed_summary(spec: str, profile: ModelProfile, config_file: Path) -> str:
    """What the ``⚠`` beside a guessed figure means: what dcode assumed, and where to set the
    real figures. Empty when nothing is guessed."""
    if not profile.guessed:
        return ""
    return (
        f"{GUESSED_MARK} guessed: no profile source (langchain, dcode's presets, the model's server, your config) "
        f"gives these for {spec}, so dcode assumes {assumed(profile)}{_image_consequence(profile)}. "
        f'If they are wrong, set them under [models."{spec}"] in {config_file}.'
    )


def assumed(profile: ModelProfile) -> str:
    """``image_inputs = false, max_input_tokens = 32768``: the guessed figures, as config lines."""
    return ", ".join(
        f"{name} = {_value(getattr(profile, name))}" for name in sorted(profile.guessed)
    )


def _image_consequence(profile: ModelProfile) -> str:
    if "image_inputs" in profile.guessed and not profile.image_inputs:
        return " (images you attach reach it as text placeholders)"
    return ""


def _value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else f"{value}"
