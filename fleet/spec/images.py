"""Image references: `registry/repo:tag@sha256:digest`, split into their parts.

Used by validation (pinning policy), rendering and plan (which engine version an image is).
"""

import re

from fleet.base import CoreModel

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


class ImageRef(CoreModel):
    """An image reference split into repository, tag and digest."""

    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def version(self) -> tuple[int, int, int] | None:
        """The release the tag names (`v0.11.2` -> (0, 11, 2)); None if it names none."""
        return parse_version(self.tag or "")


def parse_image(reference: str) -> ImageRef:
    """Split `vllm/vllm-openai:v0.18.0@sha256:ab..` into its parts."""
    rest, _, digest = reference.partition("@")
    last_slash = rest.rfind("/")
    colon = rest.rfind(":")
    tag = None
    if colon > last_slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
    return ImageRef(repository=rest, tag=tag or None, digest=digest or None)


def parse_version(text: str) -> tuple[int, int, int] | None:
    """'v0.11.2', '0.18.0rc1' or '0.9.2.post1' -> (0, 11, 2); None if not a version."""
    match = _VERSION.match(text.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
