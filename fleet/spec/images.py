"""Image references: `registry/repo:tag@sha256:digest`, split into their parts.

Used by validation (pinning policy), rendering and plan (which engine version an image is).
"""

from __future__ import annotations

from fleet.base import CoreModel


class ImageRef(CoreModel):
    """An image reference split into repository, tag and digest."""

    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def pinned(self) -> bool:
        """True when the reference names a digest."""
        return self.digest is not None


def parse_image(reference: str) -> ImageRef:
    """Split `vllm/vllm-openai:v0.18.0@sha256:ab..` into its parts."""
    rest, _, digest = reference.partition("@")
    last_slash = rest.rfind("/")
    colon = rest.rfind(":")
    tag = None
    if colon > last_slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
    return ImageRef(repository=rest, tag=tag or None, digest=digest or None)
