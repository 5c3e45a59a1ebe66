"""Where a seat's model comes from: a model store over SSH, or the Hugging Face hub.

A seat's `model` is either the plain path on its host (fleet only checks it exists) or a
mapping that also says how to fetch it when it is missing:

    model:
      path: /models/Qwen3-32B
      source: store:nas:/srv/models/Qwen3-32B     # or hf://Qwen/Qwen3-32B@<commit>
      revision: 9216db5781bf21249d130ec9da846c4624c16137
      sha256: <hex>                               # a single-file model (GGUF), or
      manifest: {config.json: {size: 1234, sha256: <hex>}, ...}   # a directory's files

`store:<name>:<path>` names a store of `fleet.yaml`'s `stores:` (an SSH endpoint the
destination host reaches with its own key; another host of the fleet is declared there
by its address). `hf://Org/Name[@revision]` is fetched on the host with `hf download`,
the token a `${VAR}` reference fleet passes on stdin, never in the command. Parsed here
(pure); the seat's loader (`fleet.spec.models.Seat`) moves the mapping into
`Seat.model_origin`, leaving `Seat.model` the path every other reader uses.
"""

import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from fleet.base import CoreModel
from fleet.units import ByteSize

_STORE = re.compile(r"^store:(?P<store>[A-Za-z0-9][\w.-]*):(?P<path>/.*)$")
_HF = re.compile(r"^hf://(?P<repo>[\w.-]+/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
_SHA256 = r"^[0-9a-f]{64}$"
COMMIT = re.compile(r"^[0-9a-f]{40}$")  # a Hugging Face commit: the only pinned revision


class ModelStore(CoreModel):
    """fleet.yaml `stores.<name>`: an SSH endpoint holding model directories, reached from
    the destination host (rsync over SSH runs there; the controller never holds weights)."""

    address: str = Field(
        pattern=r"^[A-Za-z0-9_\[][A-Za-z0-9_.:\[\]-]*$",
        description="Address the hosts reach the store at (a name or an IP address).",
    )
    port: int = Field(22, ge=1, le=65535, description="sshd port of the store.")
    user: str = Field(
        "models",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        description="Login user on the store (never starts with '-': not an ssh option).",
    )
    identity_file: str = Field(
        "/etc/fleet/store_key", description="Private key on the destination host."
    )
    known_hosts: str | None = Field(
        None, description="known_hosts file on the destination host (default: the user's own)."
    )


class ManifestEntry(CoreModel):
    """One file a model directory must hold: its size and, optionally, its sha256."""

    size: ByteSize | None = Field(None, description="Size in bytes.")
    sha256: str | None = Field(None, pattern=_SHA256, description="Lowercase hex digest.")


class ModelOrigin(CoreModel):
    """Where a seat's model comes from and what it must be once fetched."""

    source: str = Field(description="store:<name>:/path or hf://Org/Name[@revision].")
    revision: str | None = Field(None, description="What is fetched: a commit, a tag, a label.")
    sha256: str | None = Field(None, pattern=_SHA256, description="Digest of a single-file model.")
    manifest: dict[str, ManifestEntry] | None = Field(
        None, description="Files (relative paths) the directory must hold."
    )
    token: str | None = Field(None, description="hf://: a ${VAR} reference to the hub token.")

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if not (_STORE.match(value) or _HF.match(value)):
            raise ValueError(
                f"source {value!r} is neither store:<store>:/path nor hf://Org/Name[@revision]"
            )
        return value

    @model_validator(mode="after")
    def _one_check(self) -> Self:
        if self.sha256 and self.manifest:
            raise ValueError("give sha256 (a single file) or manifest (a directory), not both")
        if self.kind == "store" and self.token:
            raise ValueError("token is for hf:// sources")
        hf = _HF.match(self.source)
        if hf and hf["revision"] and self.revision and hf["revision"] != self.revision:
            raise ValueError(f"source says @{hf['revision']} but revision is {self.revision}")
        return self

    @property
    def kind(self) -> Literal["store", "hf"]:
        """store or hf."""
        return "store" if self.source.startswith("store:") else "hf"

    @property
    def store(self) -> str | None:
        """The store name of a store: source."""
        match = _STORE.match(self.source)
        return match["store"] if match else None

    @property
    def location(self) -> str:
        """The path on the store, or the hub repository (Org/Name)."""
        match = _STORE.match(self.source) or _HF.match(self.source)
        assert match is not None  # the validator made sure
        return match["path"] if self.kind == "store" else match["repo"]

    @property
    def pinned_revision(self) -> str | None:
        """The revision, from the field or the hf:// URL's @revision."""
        hf = _HF.match(self.source)
        return self.revision or (hf["revision"] if hf else None)

    def unpinned(self) -> str | None:
        """Why what is fetched could change under the same spec (None: it cannot)."""
        revision = self.pinned_revision
        if self.kind == "hf":
            if revision is None:
                return "has no revision: the hub's main branch moves; pin a commit"
            if not COMMIT.match(revision):
                return f"revision {revision!r} is a branch or tag that can move: pin a commit"
            return None
        if revision is None and self.sha256 is None and self.manifest is None:
            return "has no revision, sha256 or manifest: nothing says what is copied"
        return None


def path_or_mapping(schema: dict[str, Any]) -> None:
    """`fleet schema seat`: `model` is a path, or a mapping of the path and its origin."""
    text = {"type": "string"}
    origin = {k: text for k in ("path", "source", "revision", "sha256", "token")}
    schema.pop("type", None)
    schema["anyOf"] = [
        text,
        {
            "type": "object",
            "required": ["path", "source"],
            "properties": {**origin, "manifest": {"type": "object"}},
            "additionalProperties": False,
        },
    ]


def split_model_mapping(data: Any) -> Any:
    """A seat's data with `model: {path, source, ...}` split into `model` (the path) and
    `model_origin` (the rest); anything else unchanged."""
    if not isinstance(data, dict):
        return data
    if "model_origin" in data:
        raise ValueError("write the model's source under `model:` ({path, source, ...})")
    model = data.get("model")
    if not isinstance(model, dict):
        return data
    rest = {k: v for k, v in model.items() if k != "path"}
    path = {"model": model["path"]} if "path" in model else {}
    others = {k: v for k, v in data.items() if k != "model"}
    return {**others, **path, "model_origin": rest or None}


def error_loc(loc: tuple[str | int, ...], message: str) -> tuple[tuple[str | int, ...], str]:
    """An error about `model_origin` as the seat's file says it: under `model`."""
    if loc == ("model",) and message.startswith("missing"):
        return loc, "missing required key 'model' (or model.path)"
    if loc[:1] != ("model_origin",):
        return loc, message
    return ("model", *loc[1:]), message.replace("model_origin", "model")
