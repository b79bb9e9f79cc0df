"""Which BPE a model's tokens are counted with.

OpenAI's current models (gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series) use o200k, the older
ones (gpt-4, gpt-3.5) cl100k; for those the count is the provider's. Any other model (DeepSeek,
Qwen, a local one) has a tokenizer dcode does not ship: it is counted with o200k, the closest
modern BPE, and the estimate is scaled by the session's calibration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dcode.context.tokens.encodings import CL100K, O200K

_O200K = re.compile(r"^(ft:)?(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4)(\b|-|$)")
_CL100K = re.compile(r"^(ft:)?(gpt-4|gpt-3\.5|gpt-35)(\b|-|$)")


@dataclass(frozen=True, slots=True)
class Family:
    encoding: str
    exact: bool  # the provider counts with this encoding (an OpenAI model)


def family_for(model: str) -> Family:
    """The encoding for ``model`` (a bare name, or a router's ``vendor/name``)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if _O200K.match(name):
        return Family(O200K, True)
    if _CL100K.match(name):
        return Family(CL100K, True)
    return Family(O200K, False)
