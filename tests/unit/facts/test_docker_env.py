"""A container's own environment: what it set beyond its image, secrets as ${NAME}."""

from __future__ import annotations

import json

import pytest

from fleet.facts.docker_inspect import parse_docker_inspect

IMAGE = {"Id": "sha256:" + "c" * 64, "Config": {"Env": ["PATH=/usr/bin", "LANG=C.UTF-8"]}}


@pytest.mark.parametrize(
    ("env", "kept"),
    [
        (["PATH=/usr/bin", "LANG=C.UTF-8"], {}),
        (["PATH=/usr/local/bin:/usr/bin"], {"PATH": "/usr/local/bin:/usr/bin"}),
        (["HF_HUB_OFFLINE=1", "NVIDIA_VISIBLE_DEVICES=0"], {"HF_HUB_OFFLINE": "1"}),
        (["HF_TOKEN=hf_abcdefghijklmnopqrstuvwx"], {"HF_TOKEN": "${HF_TOKEN}"}),
        (["OPENAI_API_KEY=sk-live-0123456789abcdefghij"], {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}),
        (["MODEL_HINT=sk-live-0123456789abcdefghij"], {"MODEL_HINT": "${MODEL_HINT}"}),
        (["DB_URL=postgres://fleet:hunter2@db:5432/x"], {"DB_URL": "${DB_URL}"}),
        (["CACHE_URL=http://cache:8080/x"], {"CACHE_URL": "http://cache:8080/x"}),
        (["KEY_REF=${ALREADY}"], {"KEY_REF": "${ALREADY}"}),
    ],
    ids=[
        "image-defaults-dropped",
        "changed-default-kept",
        "handover-dropped",
        "secret-by-name",
        "key-by-name",
        "key-by-shape",
        "credentials-in-url",
        "plain-url",
        "reference-stays",
    ],
)
def test_own_environment(env: list[str], kept: dict[str, str]) -> None:
    item = {"Id": "a", "Image": IMAGE["Id"], "Config": {"Env": env}}
    (fact,) = parse_docker_inspect(json.dumps([item]), json.dumps([IMAGE]))
    assert fact.env == kept
    assert "hunter2" not in fact.model_dump_json() and "sk-live" not in fact.model_dump_json()
