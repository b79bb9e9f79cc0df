"""Request variants: the route-sized bytes of an attachment, made once and shared.

``VariantService.get`` is what request projection awaits for each image:
1. plan the variant from facts (``derive.plan_variant``); an attachment already within the
   route's budgets passes through with no work at all;
2. otherwise join the in-flight transform for that variant id, or start one in the bounded
   pool (singleflight): N concurrent callers cause one transform;
3. inside the flight: a header-checked cache hit returns at once; a miss reads the attachment
   (digest-verified), transforms it and writes the cache entry.

Each waiter awaits the shared task through ``asyncio.shield``, so cancelling one waiter (a
user interrupting one request) never cancels the transform or the other waiters; a flight
whose waiters all left still finishes and fills the cache for next time.

``get_sync`` is for code already off the loop (``media inspect``, tests): same cache, no
singleflight (duplicate work there is harmless: writes are atomic and identical).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from dcode.media.attachment import Attachment
from dcode.media.derive import VariantPlan, derive_variant, plan_variant
from dcode.media.encode import Encoded, EncoderPolicy
from dcode.media.facts import FORMAT_OF_MEDIA_TYPE
from dcode.media.limits import DEFAULT_ROUTE, ImageRoute
from dcode.media.pool import TransformPool
from dcode.media.stages import stage
from dcode.media.store import AttachmentStore
from dcode.media.tokens import estimate_image_tokens
from dcode.media.variant_cache import CachedVariant, VariantCache

__all__ = ["DEFAULT_ROUTE", "ImageRoute", "Transform", "Variant", "VariantService"]

Transform = Callable[[bytes, Attachment, VariantPlan, EncoderPolicy], Encoded]
"""The pure transform (normalized bytes → variant); injectable for tests and instrumentation."""


@dataclass(frozen=True, slots=True)
class Variant:
    """A request-ready image: read ``path`` (read-only) and base64 it into the request."""

    variant_id: str
    attachment_id: str
    path: Path
    media_type: str
    width: int
    height: int
    byte_size: int
    passthrough: bool
    fits: bool

    @property
    def format(self) -> str:
        return FORMAT_OF_MEDIA_TYPE[self.media_type]

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def estimated_tokens(self, route: ImageRoute) -> int:
        return estimate_image_tokens(self.width, self.height, route.tokens)


class VariantService:
    """Produces and caches request variants for one attachment store."""

    def __init__(
        self,
        store: AttachmentStore,
        pool: TransformPool | None = None,
        *,
        transform: Transform = derive_variant,
    ) -> None:
        self.store = store
        self.policy = store.policy
        self.cache = VariantCache(store.variants_dir)
        self._pool = pool if pool is not None else TransformPool()
        self._owns_pool = pool is None
        self._transform = transform
        self._flights: dict[tuple[int, str], asyncio.Task[Variant]] = {}

    def plan(self, att: Attachment, route: ImageRoute) -> VariantPlan:
        return plan_variant(att, route, self.policy)

    async def get(self, att: Attachment, route: ImageRoute = DEFAULT_ROUTE) -> Variant:
        """The variant of ``att`` for ``route``; raises ``AttachmentUnavailableError`` when the
        attachment is missing or damaged (projection turns that into a placeholder)."""
        plan = self.plan(att, route)
        if plan.passthrough:
            return self._passthrough(att, plan)
        loop = asyncio.get_running_loop()
        key = (id(loop), plan.variant_id)
        flight = self._flights.get(key)
        if flight is None:
            flight = loop.create_task(self._fly(plan, att), name=f"variant-{plan.variant_id[:12]}")
            self._flights[key] = flight
            flight.add_done_callback(partial(self._landed, key))
        return await asyncio.shield(flight)

    def get_sync(self, att: Attachment, route: ImageRoute = DEFAULT_ROUTE) -> Variant:
        """Blocking ``get`` for callers already off the event loop."""
        plan = self.plan(att, route)
        if plan.passthrough:
            return self._passthrough(att, plan)
        return self._materialize(plan, att)

    def close(self) -> None:
        if self._owns_pool:
            self._pool.shutdown()

    async def _fly(self, plan: VariantPlan, att: Attachment) -> Variant:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool.executor, self._materialize, plan, att)

    def _landed(self, key: tuple[int, str], flight: asyncio.Task[Variant]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not flight.cancelled():
            flight.exception()  # mark retrieved: waiters that left must not cause a warning

    def _materialize(self, plan: VariantPlan, att: Attachment) -> Variant:
        with stage("variant_lookup"):
            cached = self.cache.lookup(plan)
        if cached is None:
            with stage("variant_read"):
                source = self.store.read_bytes(att)
            encoded = self._transform(source, att, plan, self.policy)
            with stage("variant_store"):
                cached = self.cache.put(plan, encoded)
        return _variant(plan, cached)

    def _passthrough(self, att: Attachment, plan: VariantPlan) -> Variant:
        return Variant(
            variant_id=plan.variant_id,
            attachment_id=att.id,
            path=self.store.path_for(att),
            media_type=att.media_type,
            width=att.width,
            height=att.height,
            byte_size=att.byte_size,
            passthrough=True,
            fits=True,
        )


def _variant(plan: VariantPlan, cached: CachedVariant) -> Variant:
    return Variant(
        variant_id=plan.variant_id,
        attachment_id=plan.attachment_id,
        path=cached.path,
        media_type=plan.media_type,
        width=plan.width,
        height=plan.height,
        byte_size=cached.byte_size,
        passthrough=False,
        fits=cached.fits,
    )
