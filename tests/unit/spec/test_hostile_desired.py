"""desired/ written by an attacker (a pull request nobody has reviewed yet): every hostile
value is one `file:line: error:` line from `fleet validate`, in bounded time and memory,
and no error message repeats a secret."""

from __future__ import annotations

import time

import pytest

from fleet.runtimes import validate_fleet
from fleet.spec.load import load_fleet
from fleet.spec.problems import Problem
from tests.unit.spec.test_validate import example_files


def problems_after(edits: list[tuple[str, str, str]]) -> list[Problem]:
    files = example_files()
    for rel, old, new in edits:
        if old == "":
            files[rel] = files.get(rel, "") + new
            continue
        assert old in files[rel], f"{old!r} not in {rel}"
        files[rel] = files[rel].replace(old, new, 1)
    return validate_fleet(load_fleet(files))


def _alias_bomb(levels: int) -> str:
    text = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in range(1, levels + 1):
        text += f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * 9) + "]\n"
    return text


SEC = "seats/sec.yaml"
SEC_PORT = (SEC, "port: 8025", "port: 8025")
BOUNDS = [
    (
        "alias-bomb",
        [(SEC, "port: 8025", "port: 8025\nenv:\n" + _alias_bomb(7).replace("a", "  a", 1))],
        "desired/seats/sec.yaml:",
        "aliases expand to more than 100,000 values",
    ),
    (
        "nul-byte",
        [(SEC, "served_name: sec", "served_name: se\x00c")],
        "desired/seats/sec.yaml:7:",
        "control character U+0000 in the text",
    ),
    (
        "nul-escape",
        [(SEC, "served_name: sec", 'served_name: "se\\0c"')],
        "desired/seats/sec.yaml:7:",
        "served_name: control character U+0000 is not allowed",
    ),
    (
        "nested-lists",
        [(SEC, "aliases: [sec, sec-reasoning]", "aliases: " + "[" * 1000 + "]" * 1000)],
        "desired/seats/sec.yaml:14:",
        "nested more than 32 levels deep",
    ),
    (
        "long-integer",
        [(SEC, "context: 262144", "context: " + "9" * 5000)],
        "desired/seats/sec.yaml:8:",
        "an integer of 5,000 digits",
    ),
    (
        "huge-file",
        [(SEC, "", "# " + "x" * (1 << 20) + "\n")],
        "desired/seats/sec.yaml:1:",
        "the file is",
    ),
    (
        "recursive-alias",
        [(SEC, "port: 8025", "port: 8025\nenv: &e {A: *e}")],
        "desired/seats/sec.yaml:14:",
        "refers to a value that holds it",
    ),
]


@pytest.mark.parametrize(
    ("edits", "where", "message"), [c[1:] for c in BOUNDS], ids=[c[0] for c in BOUNDS]
)
def test_hostile_bytes_are_one_clear_line_in_bounded_time(
    edits: list[tuple[str, str, str]], where: str, message: str
) -> None:
    started = time.monotonic()
    problems = [str(p) for p in problems_after(edits)]
    assert time.monotonic() - started < 10
    assert [p for p in problems if p.startswith(where) and message in p], problems


def test_a_duplicate_key_is_refused_without_repeating_either_value() -> None:
    edits = [(SEC, "port: 8025", "port: 8025\nenv:\n  DB: first-value-x\n  DB: second-value-y")]
    problems = [str(p) for p in problems_after(edits)]
    assert "desired/seats/sec.yaml:16: error: YAML syntax error: key 'DB' is given twice" in (
        problems
    )
    assert not [p for p in problems if "first-value-x" in p or "second-value-y" in p]


SHAPES = [
    (
        "served-name-newline",
        [(SEC, "served_name: sec", 'served_name: "sec\\n[Service]\\nExecStartPre=/bin/id"')],
        "desired/seats/sec.yaml:7: error: served_name: control character U+000A",
    ),
    (
        "served-name-carriage-return",
        [(SEC, "served_name: sec", 'served_name: "sec\\rExecStartPre=/bin/id"')],
        "desired/seats/sec.yaml:7: error: served_name: control character U+000D",
    ),
    (
        "served-name-shell",
        [(SEC, "served_name: sec", "served_name: sec;touch /tmp/pwned")],
        "desired/seats/sec.yaml:7: error: served_name 'sec;touch /tmp/pwned': letters",
    ),
    (
        "alias-command-substitution",
        [(SEC, "aliases: [sec, sec-reasoning]", "aliases: [sec, '$(id)']")],
        "desired/seats/sec.yaml:14: error: alias '$(id)': letters",
    ),
    (
        "alias-backticks",
        [(SEC, "aliases: [sec, sec-reasoning]", "aliases: [sec, '`id`']")],
        "desired/seats/sec.yaml:14: error: alias '`id`': letters",
    ),
    (
        "alias-space",
        [(SEC, "aliases: [sec, sec-reasoning]", "aliases: [sec, 'a b']")],
        "desired/seats/sec.yaml:14: error: alias 'a b': letters",
    ),
    (
        "publish-address",
        [("hosts/rig.yaml", "publish_address: 127.0.0.12", "publish_address: 0.0.0.0;id")],
        "desired/hosts/rig.yaml:5: error: publish_address '0.0.0.0;id' is neither",
    ),
    (
        "address",
        [("hosts/rig.yaml", "address: 127.0.0.12", "address: 'a b'")],
        "desired/hosts/rig.yaml:4: error: address 'a b' is neither",
    ),
    (
        "compose-dir-dotdot",
        [("hosts/rig.yaml", "compose_dir: /srv/fleet", "compose_dir: ../../tmp/x y")],
        "desired/hosts/rig.yaml:9: error: compose_dir '../../tmp/x y' is not an absolute path",
    ),
    (
        "compose-dir-dotdot-absolute",
        [("hosts/rig.yaml", "compose_dir: /srv/fleet", "compose_dir: /srv/../etc")],
        "desired/hosts/rig.yaml:9: error: compose_dir '/srv/../etc' holds a '.' or '..'",
    ),
    (
        "models-root-slash",
        [("hosts/tower.yaml", "models_root: /models ", "models_root: / ")],
        "desired/hosts/tower.yaml:12: error: models_root '/' is the root directory",
    ),
    (
        "model-docker-socket",
        [(SEC, "model: /models/Qwen3.5-27B", "model: /var/run/docker.sock:/models/x")],
        "desired/seats/sec.yaml:6: error: model '/var/run/docker.sock:/models/x' holds a character",
    ),
    (
        "model-outside-root",
        [(SEC, "model: /models/Qwen3.5-27B", "model: /etc/shadow")],
        "desired/seats/sec.yaml:6: error: model '/etc/shadow' is not under the host's "
        "models_root /models",
    ),
    (
        "seat-name",
        [
            (
                "seats/x;id.yaml",
                "",
                "host: tower\ngpus: [3]\nimage: vllm/vllm-openai:v0.18.0\n"
                "model: /models/Qwen3.5-27B\nserved_name: x\ncontext: 4096\nkv_cache_bytes: 1GiB\n"
                "port: 8099\n",
            )
        ],
        "desired/seats/x;id.yaml:1: error: seat name 'x;id': letters",
    ),
    (
        "inventory-outside",
        [("fleet.yaml", "path: inventory/INVENTORY.md", "path: /root/.bashrc")],
        "desired/fleet.yaml:11: error: inventory.path '/root/.bashrc' must be relative",
    ),
    (
        "inventory-dotdot",
        [("fleet.yaml", "path: inventory/INVENTORY.md", "path: ../../.bashrc")],
        "desired/fleet.yaml:11: error: inventory.path '../../.bashrc' must stay inside",
    ),
    (
        "ssh-config-file",
        [("fleet.yaml", "name: lab-fleet", "name: lab-fleet\nssh: {config_file: ./evil}")],
        "desired/fleet.yaml:3: error: ssh.config_file: the ssh_config comes from the operator",
    ),
    (
        "image-shell",
        [(SEC, "image: vllm/vllm-openai:v0.18.0", "image: 'vllm/vllm-openai:v0.18.0;id'")],
        "desired/seats/sec.yaml:5: error: image 'vllm/vllm-openai:v0.18.0;id' is not an image",
    ),
    (
        "gateway-url",
        [("gateway.yaml", "url: http://127.0.0.13:4000", "url: 'http://127.0.0.13:4000 ;id'")],
        "desired/gateway.yaml:4: error: url 'http://127.0.0.13:4000 ;id' is not http(s)://",
    ),
    (
        "tab-in-env",
        [(SEC, "port: 8025", 'port: 8025\nenv: {MODE: "a\\tb"}')],
        "desired/seats/sec.yaml:14: error: env.MODE: control character U+0009",
    ),
]


@pytest.mark.parametrize(("edits", "expected"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_values_that_would_be_structure_elsewhere_are_refused(
    edits: list[tuple[str, str, str]], expected: str
) -> None:
    problems = [str(p) for p in problems_after(edits)]
    assert [p for p in problems if p.startswith(expected)], problems


SECRET = "Zq8wLx3vNp2Rt7Ks"  # a literal no key-shape pattern knows
SECRETS = [
    (
        "env-reference-in-extra-args",
        [(SEC, "port: 8025", "port: 8025\nextra_args: [--api-key, '${SEC_KEY}']")],
        "desired/seats/sec.yaml:14: error: extra_args[1] interpolates an environment "
        "variable: the argv of an engine is visible to every user of its host; put it in env:",
    ),
    (
        "api-key-flag",
        [(SEC, "port: 8025", f"port: 8025\nextra_args: [--api-key, {SECRET}]")],
        "desired/seats/sec.yaml:14: error: extra_args.0 holds a literal value for --api-key",
    ),
    (
        "hf-token-equals",
        [(SEC, "port: 8025", f"port: 8025\nextra_args: [--hf-token={SECRET}]")],
        "desired/seats/sec.yaml:14: error: extra_args.0 holds a literal value for --hf-token",
    ),
    (
        "db-pass",
        [(SEC, "port: 8025", f"port: 8025\nenv: {{DB_PASS: {SECRET}}}")],
        "desired/seats/sec.yaml:14: error: 'DB_PASS' holds a literal value",
    ),
    (
        "auth",
        [(SEC, "port: 8025", f"port: 8025\nenv: {{AUTH: {SECRET}}}")],
        "desired/seats/sec.yaml:14: error: 'AUTH' holds a literal value",
    ),
    (
        "database-url",
        [(SEC, "port: 8025", f"port: 8025\nenv: {{DATABASE_URL: 'postgres://u:{SECRET}@db/x'}}")],
        "desired/seats/sec.yaml:14: error: env.DATABASE_URL holds credentials in a URL",
    ),
    (
        "gateway-url",
        [("gateway.yaml", "url: http://", f"url: http://ops:{SECRET}@")],
        "desired/gateway.yaml:4: error: url holds credentials in a URL",
    ),
    (
        "webhook-url",
        [
            (
                "fleet.yaml",
                "name: lab-fleet",
                f"name: lab-fleet\nreconcile: {{webhook_url: 'https://hooks.example/{SECRET}'}}",
            )
        ],
        "desired/fleet.yaml:3: error: 'webhook_url' holds a literal value",
    ),
    (
        "url-query-token",
        [(SEC, "port: 8025", f"port: 8025\nenv: {{HOOK: 'https://x.example/?token={SECRET}'}}")],
        "desired/seats/sec.yaml:14: error: env.HOOK holds a token in a URL's query",
    ),
]


@pytest.mark.parametrize(
    ("edits", "expected"), [c[1:] for c in SECRETS], ids=[c[0] for c in SECRETS]
)
def test_literal_secrets_are_told_by_name_and_by_shape(
    edits: list[tuple[str, str, str]], expected: str
) -> None:
    problems = [str(p) for p in problems_after(edits)]
    assert [p for p in problems if p.startswith(expected)], problems
    assert not [p for p in problems if SECRET in p], "an error message repeats the secret"


@pytest.mark.parametrize(
    "edits",
    [
        [(SEC, "port: 8025", "port: 8025\nenv: {DATABASE_URL: 'postgres://u:${DB_PW}@db/x'}")],
        [(SEC, "port: 8025", "port: 8025\nenv: {VLLM_API_KEY: '${SEC_KEY}'}")],
        [(SEC, "port: 8025", "port: 8025\nextra_args: [--api-key-file, /run/key]")],
    ],
    ids=["url-with-reference", "env-reference", "not-a-secret-flag"],
)
def test_references_delivered_without_argv_stay_valid(edits: list[tuple[str, str, str]]) -> None:
    assert [str(p) for p in problems_after(edits) if p.severity == "error"] == []


def test_a_control_character_in_a_key_is_shown_escaped_on_one_line() -> None:
    edits = [("fleet.yaml", "name: lab-fleet", 'name: {"a\\x1eb\\u2028": x}')]
    problems = [str(p) for p in problems_after(edits)]
    assert "desired/fleet.yaml:2: error: name.a\\x1eb\\u2028: control character U+001E is " in (
        "\n".join(problems)
    )
    assert all(len(p.splitlines()) == 1 for p in problems)
