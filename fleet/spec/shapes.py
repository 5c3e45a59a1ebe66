"""Strict shapes for every desired/ string that lands in a file, a path or a command.

desired/ reaches the hosts as compose files, unit files, `.env` files, shell commands and
paths, and a pull request nobody has reviewed yet is planned as it stands. So a value
that another program would read as structure is refused here rather than escaped
everywhere: names (a seat's becomes a compose service, a unit, a label), served names and
aliases, addresses (an IP or a hostname), the host's directories (absolute, no `..`, not
`/`), a model (a path under its host's `models_root`, which compose bind-mounts), the
inventory (a path inside the repository), and control characters anywhere (a newline
in a served name would start a `[Service]` section of its own in a unit file).
Run by `fleet.spec.validate`; each problem names its file and key. Pure.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from fleet.secrets import redact_url
from fleet.spec.load import Loc, Sources
from fleet.spec.models import DesiredFleet, Host, Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SERVED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=,-]{0,199}$")
HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$")
URL = re.compile(r"^https?://[^\s/?#@]+(?:/[^\s]*)?$")
USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH_CHARS = re.compile(r"^[A-Za-z0-9._@+=,~/-]+$")
_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit"
_NOT_ADDRESS = "is neither an IP nor a hostname"
_SERVED_RULE = "letters, digits and . _ : / @ + = , - (no spaces, quotes or shell characters)"


def check_control_characters(src: Sources) -> Iterator[Problem]:
    """No control character (a newline, a carriage return, a tab, NUL...) in any key or
    value of desired/: each would end a line, a word or a string in a file fleet writes."""
    for rel, tree in sorted(src.trees.items()):
        for loc, text in _strings(tree, ()):
            bad = next((c for c in text if _is_control(c)), None)
            if bad is not None:
                where = ".".join(str(p) for p in loc) or "a key"
                yield src.problem(
                    rel, loc, f"{where}: control character U+{ord(bad):04X} is not allowed"
                )


def _is_control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def _strings(tree: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            if isinstance(key, str):
                yield (*loc, key), key
            yield from _strings(value, (*loc, key))
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            yield from _strings(item, (*loc, index))
    elif isinstance(tree, str):
        yield loc, tree


def check_shapes(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Names, addresses, directories and paths of fleet.yaml, hosts, seats and gateway."""
    inventory = desired.settings.inventory.path
    if (why := repo_path_problem(inventory)) is not None:
        yield src.problem("fleet.yaml", ("inventory", "path"), f"inventory.path {why}")
    config_file = desired.settings.ssh.config_file
    if config_file not in (None, "~/.ssh/config"):
        yield src.problem(
            "fleet.yaml",
            ("ssh", "config_file"),
            "ssh.config_file: the ssh_config comes from the operator's environment "
            "($FLEET_SSH_CONFIG, else ~/.ssh/config), never from desired/, whose file "
            "could run commands here (Match exec, ProxyCommand); remove the key",
        )
    for host in sorted(desired.hosts.values(), key=lambda h: h.name):
        yield from _check_host(host, src)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        yield from _check_seat(seat, desired.hosts.get(seat.host), src)
    yield from _check_gateway(desired, src)


def _check_host(host: Host, src: Sources) -> Iterator[Problem]:
    rel = f"hosts/{host.name}.yaml"
    if not NAME.match(host.name):
        yield src.problem(rel, ("name",), f"host name {host.name!r}: {_NAME_RULE}")
    for key, value in (("address", host.address), ("publish_address", host.publish_address)):
        if not is_address(value):
            yield src.problem(rel, (key,), f"{key} {value!r} {_NOT_ADDRESS}")
    if host.ssh.address is not None and not is_address(host.ssh.address):
        yield src.problem(rel, ("ssh", "address"), f"ssh.address {_NOT_ADDRESS}")
    if host.ssh.alias is not None and not NAME.match(host.ssh.alias):
        yield src.problem(rel, ("ssh", "alias"), f"ssh.alias {host.ssh.alias!r}: {_NAME_RULE}")
    if host.ssh.user is not None and not USER.match(host.ssh.user):
        yield src.problem(rel, ("ssh", "user"), f"ssh.user {host.ssh.user!r} is not a user name")
    for key, value in _host_dirs(host):
        why = host_path_problem(value)
        if why is None and value.rstrip("/") == "":
            why = "is the root directory"
        if why is not None:
            yield src.problem(rel, (key,), f"{key} {value!r} {why}")


def _host_dirs(host: Host) -> Iterator[tuple[str, str]]:
    """The directories a host file names: models_root, state_dir and its runtime's own."""
    yield "models_root", host.models_root
    if host.state_dir is not None:
        yield "state_dir", host.state_dir
    for key, value in host.settings.model_dump().items():
        if key.endswith("_dir") and isinstance(value, str):
            yield key, value


def _check_seat(seat: Seat, host: Host | None, src: Sources) -> Iterator[Problem]:
    rel = seat_file(seat)
    if not NAME.match(seat.name):
        yield src.problem(rel, ("name",), f"seat name {seat.name!r}: {_NAME_RULE}")
    if not SERVED.match(seat.served_name):
        message = f"served_name {seat.served_name!r}: {_SERVED_RULE}"
        yield src.problem(rel, ("served_name",), message)
    yield from _check_image(seat, host, rel, src)
    for index, alias in enumerate(seat.aliases):
        if not SERVED.match(alias):
            yield src.problem(rel, ("aliases", index), f"alias {alias!r}: {_SERVED_RULE}")
    for name in seat.env:
        if not ENV_NAME.match(name):
            yield src.problem(rel, ("env", name), f"env name {name!r}: letters, digits and '_'")
    root = host.models_root if host is not None else None
    yield from _check_model_path(rel, ("model",), seat.model, root, src)
    if seat.speculative is not None and seat.speculative.draft_model is not None:
        loc = ("speculative", "draft_model")
        yield from _check_model_path(rel, loc, seat.speculative.draft_model, root, src)


def _check_image(seat: Seat, host: Host | None, rel: str, src: Sources) -> Iterator[Problem]:
    """An executable (a unit's `image`) is a plain absolute path; an image reference has no
    whitespace or shell character (the runtimes' own rules judge which a host takes)."""
    if seat.image.startswith("/"):
        if (why := host_path_problem(seat.image)) is not None:
            yield src.problem(rel, ("image",), f"image {seat.image!r} {why}")
    elif not IMAGE.match(seat.image):
        yield src.problem(rel, ("image",), f"image {seat.image!r} is not an image reference")


def _check_model_path(
    rel: str, loc: Loc, path: str, root: str | None, src: Sources
) -> Iterator[Problem]:
    where = ".".join(str(p) for p in loc)
    why = host_path_problem(path)
    if why is not None:
        yield src.problem(rel, loc, f"{where} {path!r} {why}")
    elif root is not None and host_path_problem(root) is None and not is_under(path, root):
        yield src.problem(rel, loc, f"{where} {path!r} is not under the host's models_root {root}")


def _check_gateway(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    gateway = desired.gateway
    if gateway is None:
        return
    rel = "gateway.yaml"
    front = gateway.front
    paths: dict[Loc, str] = {("config_path",): gateway.config_path}
    if front is not None:
        paths[("front", "upstream_file")] = front.upstream_file
    for loc, value in paths.items():
        if (why := host_path_problem(value)) is not None:
            yield src.problem(rel, loc, f"{'.'.join(map(str, loc))} {value!r} {why}")
    if not URL.match(gateway.url) or not is_address(_url_host(gateway.url)):
        yield src.problem(
            rel, ("url",), f"url {redact_url(gateway.url)!r} is not http(s)://host[:port][/path]"
        )
    if front is not None and front.proxy_address and not is_address(front.proxy_address):
        yield src.problem(rel, ("front", "proxy_address"), f"front.proxy_address {_NOT_ADDRESS}")
    instance = gateway.restart.instance if gateway.restart else None
    if instance is not None and not NAME.match(instance):
        yield src.problem(rel, ("restart",), f"restart.instance: {_NAME_RULE}")
    named = list(gateway.settings.named_aliases())
    named += [("fallbacks", a) for a in gateway.fallbacks]
    named += [("fallbacks", a) for t in gateway.fallbacks.values() for a in t]
    named += [("retired_aliases", a) for a in gateway.retired_aliases]
    for key, alias in named:
        if not SERVED.match(alias):
            yield src.problem(rel, (key,), f"alias {alias!r}: {_SERVED_RULE}")


def _url_host(url: str) -> str:
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    if netloc.startswith("["):  # [IPv6]:port
        return netloc[1:].split("]", 1)[0]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def is_address(value: str) -> bool:
    """An IPv4 or IPv6 address, or a hostname (RFC 1123)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return HOSTNAME.match(value) is not None
    return True


def host_path_problem(path: str) -> str | None:
    """Why `path` is no plain absolute path on a host (None when it is one)."""
    if not path.startswith("/"):
        return "is not an absolute path"
    if not _PATH_CHARS.match(path):
        return "holds a character other than letters, digits and . _ @ + = , ~ / -"
    if any(part in (".", "..") for part in path.split("/")):
        return "holds a '.' or '..' component"
    return None


def is_under(path: str, root: str) -> bool:
    """Is `path` strictly below directory `root` (both plain absolute paths)?"""
    base = posixpath.normpath(root)
    return posixpath.normpath(path).startswith(base.rstrip("/") + "/")


def repo_path_problem(path: str) -> str | None:
    """Why `path` is no plain relative path inside the repository (None when it is one)."""
    if path.startswith("/") or path.startswith("~"):
        return f"{path!r} must be relative to the repository, not absolute"
    parts = path.split("/")
    if not path or any(part in ("", ".", "..") for part in parts):
        return f"{path!r} must stay inside the repository (no '..', '.' or empty component)"
    if not _PATH_CHARS.match(path):
        return f"{path!r} holds a character other than letters, digits and . _ @ + = , ~ / -"
    if parts[0] == ".git":
        return f"{path!r} is inside .git"
    return None
