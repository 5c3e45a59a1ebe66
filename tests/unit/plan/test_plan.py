"""make_plan on desired/observed pairs: create, each field class, remove, aliases, blockers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from fleet.gateways.litellm.render import render_gateway_config
from fleet.observed.models import GpuProcessUse, Observation, ObservedHost, ObservedSeat
from fleet.plan.actions import ActionKind
from fleet.plan.plan import Plan, make_plan
from fleet.runtimes.compose import render_service
from fleet.spec.models import DesiredFleet, Seat
from tests.unit.plan.fakes import gateway_in_sync, in_sync, live_seat
from tests.unit.plan.models import engines_as_logged, with_models
from tests.unit.render.test_compose import example

Edit = Callable[[DesiredFleet, Observation], Observation]


def replace_seat(obs: Observation, host: str, seat: str, new: object) -> Observation:
    h = obs.hosts[host]
    seats = tuple(
        new if s.name == seat else s for s in h.seats if new is not None or s.name != seat
    )
    hosts = {**obs.hosts, host: h.model_copy(update={"seats": seats})}
    return obs.model_copy(update={"hosts": hosts})


def test_in_sync_plans_nothing_and_says_why() -> None:
    fleet = example()
    plan = make_plan(fleet, in_sync(fleet))
    assert (
        plan.empty and plan.summary() == "0 to create, 0 to replace, 0 to remove, 0 alias changes"
    )
    assert {n.target for n in plan.noops} == set(fleet.seats) | {"gateway"}
    assert all("in sync" in n.reason for n in plan.noops if n.target != "gateway")


SEAT_CASES: list[
    tuple[str, Callable[[DesiredFleet, Observation], Observation], ActionKind, list[str]]
] = [
    (
        "missing-container",
        lambda f, o: replace_seat(o, "tower", "sec", None),
        ActionKind.CREATE_SEAT,
        [],
    ),
    (
        "context",
        lambda f, o: replace_seat(
            o, "tower", "sec", live_seat(f, f.seats["sec"], max_model_len="131072")
        ),
        ActionKind.REPLACE_SEAT,
        ["context"],
    ),
    (
        "kv-budget",
        lambda f, o: replace_seat(
            o, "tower", "sec", live_seat(f, f.seats["sec"], kv_cache_memory_bytes=str(14 * 1024**3))
        ),
        ActionKind.REPLACE_SEAT,
        ["kv_cache_bytes"],
    ),
    (
        "speculative",
        lambda f, o: replace_seat(
            o,
            "tower",
            "flash",
            live_seat(
                f,
                f.seats["flash"],
                speculative_config='{"method":"mtp","num_speculative_tokens":1}',
            ),
        ),
        ActionKind.REPLACE_SEAT,
        ["speculative.num_speculative_tokens"],
    ),
    (
        "image",
        lambda f, o: replace_seat(
            o,
            "rig",
            "llama8b",
            live_seat(
                f, f.seats["llama8b"].model_copy(update={"image": "vllm/vllm-openai:v0.9.2"})
            ),
        ),
        ActionKind.REPLACE_SEAT,
        ["image"],
    ),
    (
        "hash-only",
        lambda f, o: replace_seat(
            o,
            "tower",
            "coder",
            live_seat(f, f.seats["coder"].model_copy(update={"env": {"X": "1"}})),
        ),
        ActionKind.REPLACE_SEAT,
        ["compose definition"],
    ),
    (
        "exited",
        lambda f, o: replace_seat(
            o,
            "tower",
            "embed",
            (
                lambda s: s.model_copy(
                    update={"instance": s.instance.model_copy(update={"state": "exited"})}
                )
            )(live_seat(f, f.seats["embed"])),
        ),
        ActionKind.REPLACE_SEAT,
        [],
    ),
]


@pytest.mark.parametrize(
    ("edit", "kind", "fields"), [c[1:] for c in SEAT_CASES], ids=[c[0] for c in SEAT_CASES]
)
def test_seat_changes(edit: Edit, kind: ActionKind, fields: list[str]) -> None:
    fleet = example()
    plan = make_plan(fleet, edit(fleet, in_sync(fleet)))
    seat_actions = [a for a in plan.actions if a.wave == 1]
    assert [a.kind for a in seat_actions] == [kind]
    assert [c.field for c in seat_actions[0].changes] == fields


def test_image_change_is_reported_as_image() -> None:
    fleet = example()
    observed = in_sync(fleet)
    old = fleet.seats["llama8b"].model_copy(update={"image": "vllm/vllm-openai:v0.9.2"})
    observed = replace_seat(observed, "rig", "llama8b", live_seat(fleet, old))
    fake = observed.hosts["rig"].seats[0]
    # the container reports the image it was created from
    assert fake.instance.image == "vllm/vllm-openai:v0.9.2"
    change = make_plan(fleet, observed).actions[0].changes
    assert [(c.field, c.old, c.new) for c in change] == [
        ("image", "vllm/vllm-openai:v0.9.2", "vllm/vllm-openai:v0.11.2")
    ]


def test_removal_needs_prune() -> None:
    fleet = example()
    observed = in_sync(fleet)
    trimmed = fleet.model_copy(
        update={"seats": {k: v for k, v in fleet.seats.items() if k != "rerank"}}
    )
    plain = make_plan(trimmed, observed)
    assert not any(a.kind is ActionKind.REMOVE_SEAT for a in plain.actions)
    assert any(
        f.kind.value == "unmanaged-container" and "rerank" in f.target for f in plain.findings
    )
    pruned = make_plan(trimmed, observed, prune=True)
    removal = [a for a in pruned.actions if a.kind is ActionKind.REMOVE_SEAT]
    assert [(a.target, a.wave) for a in removal] == [("rerank", 3)]
    assert pruned.actions[-1] == removal[0], "removals come last"
    assert any(
        a.kind is ActionKind.REMOVE_ALIAS and a.target == "rerank"
        for a in pruned.actions
        if a.wave == 2
    )


def alias_plan(fleet: DesiredFleet, text: str) -> Plan:
    observed = in_sync(fleet).model_copy(update={"gateway": gateway_in_sync(fleet)})
    live = gateway_in_sync(fleet)
    observed = observed.model_copy(
        update={
            "gateway": live.model_copy(
                update={"config_text": text, "config": parse_gateway_config(text)}
            )
        }
    )
    return make_plan(fleet, observed)


def test_alias_moves_retirements_and_additions() -> None:
    fleet = example()
    text = gateway_in_sync(fleet).config_text or ""
    text = text.replace("id: fleet:reason:chat", "id: fleet:flash:chat")
    text = text.replace(
        "model_list:\n",
        "model_list:\n  - model_name: sec-old\n"
        "    litellm_params: {model: hosted_vllm/sec, api_base: "
        "http://127.0.0.11:8098/v1}\n",
        1,
    )
    start = text.index("  - model_name: embed")
    end = text.index("  - model_name: flash")
    text = text[:start] + text[end:]
    plan = alias_plan(fleet, text)
    gateway = [(a.kind, a.target) for a in plan.actions if a.wave == 2]
    assert gateway == [
        (ActionKind.RETARGET_ALIAS, "chat"),
        (ActionKind.ADD_ALIAS, "embed"),
        (ActionKind.REMOVE_ALIAS, "sec-old"),
        (ActionKind.RESTART_GATEWAY, "gateway"),
    ]
    retarget = next(a for a in plan.actions if a.target == "chat")
    assert retarget.reasons == ("seat flash -> reason",)


BLOCKER_CASES = [
    (
        "model-missing",
        lambda o: o.model_copy(
            update={
                "hosts": {
                    **o.hosts,
                    "tower": o.hosts["tower"].model_copy(
                        update={
                            "missing_paths": ("/models/Qwen3.5-27B",),
                            "seats": tuple(s for s in o.hosts["tower"].seats if s.name != "sec"),
                        }
                    ),
                }
            }
        ),
        "sec",
        "model directory /models/Qwen3.5-27B does not exist on tower",
    ),
    (
        "memory",
        lambda o: o.model_copy(update={"hosts": {**o.hosts, "rig": _full(o.hosts["rig"])}}),
        "llama8b",
        "needs ~22,118 MiB on rig GPU 0, which has 0 MiB free of 24,576 MiB; in use: 24,576 MiB "
        "by no process nvidia-smi lists; over-committed by 22,118 MiB",
    ),
    (
        "memory-held-by-a-process",
        lambda o: o.model_copy(update={"hosts": {**o.hosts, "rig": _held(o.hosts["rig"])}}),
        "llama8b",
        "needs ~22,118 MiB on rig GPU 0, which has 576 MiB free of 24,576 MiB; in use: "
        "pid 77 (no container) 20,000 MiB, 4,000 MiB by no process nvidia-smi lists; "
        "over-committed by 21,542 MiB",
    ),
    (
        "unreachable",
        lambda o: o.model_copy(
            update={
                "hosts": {
                    **o.hosts,
                    "rig": ObservedHost(
                        name="rig", reachable=False, error="cannot reach root@127.0.0.12:2222"
                    ),
                }
            }
        ),
        "llama8b",
        "host rig is unreachable: cannot reach root@127.0.0.12:2222",
    ),
]


# The rig cases block the SGLang seat on rig GPU 1 too (its fraction of that card: 0.8).
SGL_NEEDS = "needs ~19,660 MiB on rig GPU 1, which has {free} MiB free of 24,576 MiB; in use: "
ALSO_BLOCKED = {
    BLOCKER_CASES[-3][3]: [
        (
            "llama8b-sgl",
            SGL_NEEDS.format(free="0") + "24,576 MiB by no process nvidia-smi lists; "
            "over-committed by 19,660 MiB",
        )
    ],
    BLOCKER_CASES[-2][3]: [
        (
            "llama8b-sgl",
            SGL_NEEDS.format(free="12,288") + "12,288 MiB by no process nvidia-smi lists; "
            "over-committed by 7,372 MiB",
        )
    ],
    BLOCKER_CASES[-1][3]: [
        ("llama8b-sgl", "host rig is unreachable: cannot reach root@127.0.0.12:2222")
    ],
}


def _held(host: ObservedHost) -> ObservedHost:
    """GPU 0 nearly full: a process outside any container holds most of it."""
    gpus = tuple(
        g.model_copy(update={"memory_used_mib": 24000}) if g.index == 0 else g for g in host.gpus
    )
    process = GpuProcessUse(pid=77, gpu_index=0, used_mib=20000, container_id=None)
    return host.model_copy(update={"gpus": gpus, "seats": (), "processes": (process,)})


def _full(host: ObservedHost) -> ObservedHost:
    gpus = tuple(g.model_copy(update={"memory_used_mib": g.memory_total_mib}) for g in host.gpus)
    return host.model_copy(update={"gpus": gpus, "seats": ()})


@pytest.mark.parametrize(
    ("edit", "target", "message"), [c[1:] for c in BLOCKER_CASES], ids=[c[0] for c in BLOCKER_CASES]
)
def test_blockers(edit: Callable[[Observation], Observation], target: str, message: str) -> None:
    fleet = example()
    plan = make_plan(fleet, edit(in_sync(fleet)))
    blocked = [(b.target, b.message) for b in plan.blockers]
    assert blocked == [(target, message), *ALSO_BLOCKED.get(message, [])]


def test_flag_too_new_for_the_image_blocks() -> None:
    fleet = example()
    old = fleet.seats["sec"].model_copy(update={"image": "vllm/vllm-openai:v0.9.2"})
    fleet = fleet.model_copy(update={"seats": {**fleet.seats, "sec": old}})
    plan = make_plan(fleet, in_sync(example()))
    assert (
        "sec",
        "--kv-cache-memory-bytes needs vLLM >= 0.11.0; image vllm/vllm-openai:v0.9.2 is older",
    ) in [(b.target, b.message) for b in plan.blockers]


def test_a_seat_moving_hosts_is_created_there_and_removed_here() -> None:
    fleet = example()
    observed = in_sync(fleet)
    moved = fleet.seats["coder"].model_copy(update={"host": "rig", "gpus": (1,)})
    fleet = fleet.model_copy(update={"seats": {**fleet.seats, "coder": moved}})
    plan = make_plan(fleet, observed)
    assert [
        (a.kind, a.host, a.wave)
        for a in plan.actions
        if a.target == "coder" and a.kind.value.endswith("seat")
    ] == [(ActionKind.CREATE_SEAT, "rig", 1), (ActionKind.REMOVE_SEAT, "tower", 3)]
    assert any(a.kind is ActionKind.RETARGET_ALIAS and a.target == "coder" for a in plan.actions)


def test_a_secret_flag_in_extra_args_is_compared_masked() -> None:
    fleet = example()
    seat = fleet.seats["coder"].model_copy(update={"extra_args": ("--api-key", "${CODER_KEY}")})
    fleet = fleet.model_copy(update={"seats": {**fleet.seats, "coder": seat}})
    observed = replace_seat(in_sync(fleet), "tower", "coder", live_seat(fleet, seat))
    assert make_plan(fleet, observed).empty


def test_seat_filter_scopes_the_gateway_to_that_seat() -> None:
    fleet = example()
    text = gateway_in_sync(fleet).config_text or ""
    stale = text.replace("http://127.0.0.11:8025/v1", "http://127.0.0.11:8024/v1")  # sec
    start = stale.index("  - model_name: coder")
    stale = stale[:start] + stale[stale.index("  - model_name: embed") :]  # coder missing
    observed = in_sync(fleet).model_copy(
        update={
            "gateway": gateway_in_sync(fleet).model_copy(
                update={"config_text": stale, "config": parse_gateway_config(stale)}
            )
        }
    )
    plan = make_plan(fleet, observed, only_seats=frozenset({"coder"}))
    assert [(a.kind, a.target) for a in plan.actions] == [
        (ActionKind.ADD_ALIAS, "coder"),
        (ActionKind.RESTART_GATEWAY, "gateway"),
    ]
    assert plan.only_seats == ("coder",)
    edited = render_gateway_config(stale, fleet, frozenset({"coder"}))
    assert "http://127.0.0.11:8024/v1" in edited, "another seat's stale alias is left alone"
    assert parse_gateway_config(edited).by_alias()["coder"].seat == "coder"
    full = make_plan(fleet, observed)
    assert (ActionKind.RETARGET_ALIAS, "sec") in [(a.kind, a.target) for a in full.actions]


def _deployed(fleet: DesiredFleet, seat: Seat) -> ObservedSeat:
    """The seat as it runs, with its service as the host's compose file holds it."""
    live = live_seat(fleet, seat)
    return live.model_copy(update={"definition": render_service(seat, fleet.hosts[seat.host])})


KEYED: list[tuple[str, dict[str, object], dict[str, object], list[tuple[str, str, str]]]] = [
    (
        "env-added",
        {},
        {"env": {"HF_HUB_OFFLINE": "1"}},
        [("env HF_HUB_OFFLINE", "(absent)", "1")],
    ),
    (
        "env-changed-secret-masked",
        {"env": {"HF_TOKEN": "${HF_TOKEN}", "MODE": "a"}},
        {"env": {"HF_TOKEN": "${HF_TOKEN_2}", "MODE": "b"}},
        [("env HF_TOKEN", "${HF_TOKEN}", "${HF_TOKEN_2}"), ("env MODE", "a", "b")],
    ),
    (
        "flag-value",
        {"extra_args": ("--max-num-seqs", "256", "--enable-prefix-caching")},
        {"extra_args": ("--max-num-seqs", "128")},
        [
            ("extra_args --enable-prefix-caching", "(set)", "(absent)"),
            ("extra_args --max-num-seqs", "256", "128"),
        ],
    ),
    (
        "secret-flag-beside",
        {"extra_args": ("--api-key", "${CODER_KEY}", "--max-num-seqs", "256")},
        {"extra_args": ("--api-key", "${CODER_KEY}", "--max-num-seqs", "128")},
        [("extra_args --max-num-seqs", "256", "128")],
    ),
]


@pytest.mark.parametrize(
    ("running", "wanted", "changes"), [c[1:] for c in KEYED], ids=[c[0] for c in KEYED]
)
def test_changes_are_named_key_by_key(
    running: dict[str, object], wanted: dict[str, object], changes: list[tuple[str, str, str]]
) -> None:
    fleet = example()
    before = fleet.seats["coder"].model_copy(update=running)
    after = fleet.seats["coder"].model_copy(update=wanted)
    fleet = fleet.model_copy(update={"seats": {**fleet.seats, "coder": after}})
    observed = replace_seat(in_sync(fleet), "tower", "coder", _deployed(fleet, before))
    (action,) = [a for a in make_plan(fleet, observed).actions if a.target == "coder"]
    assert [(c.field, c.old, c.new) for c in action.changes] == changes
    assert "compose definition" not in [c.field for c in action.changes]


# What the engine or the health gate would refuse, predicted from config.json and the
# seats' logs before anything starts (tests/unit/plan/models.py sets the model facts).
TINYLLAMA, FLASH_MODEL = "/models/TinyLlama-1.1B-Chat-FP8", "/models/Qwen3-30B-A3B-NVFP4"
REAL_WEIGHTS = {"coder": 1.05, "embed": 0.08, "rerank": 0.08, "flash": 17.0, "char-rp": 51.0}


def predicted(fleet: DesiredFleet, parsed: bool, *models: str) -> Plan:
    """The plan for `fleet` on the in-sync example fleet, its models' facts observed."""
    observed = engines_as_logged(in_sync(example()), REAL_WEIGHTS)
    return make_plan(fleet, with_models(observed, parsed=parsed, only=models))


def messages(plan: Plan, target: str) -> list[str]:
    return [b.message for b in plan.blockers if b.target == target]


CONTEXT_CASES = [
    (
        "above-the-derived-maximum",
        {"seats/coder.yaml": ("context: 2048", "context: 4096")},
        [
            "context 4,096 is above the 2,048 tokens /models/TinyLlama-1.1B-Chat-FP8 allows "
            "(max_position_embeddings 2,048 in config.json), which vLLM refuses: set context to "
            "at most 2,048, or env VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1' (positions past it break "
            "the model)"
        ],
    ),
    (
        "allowed-by-the-env",
        {
            "seats/coder.yaml": (
                "context: 2048",
                "context: 4096\nenv: {VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}",
            )
        },
        [],
    ),
    ("at-the-maximum", {"seats/coder.yaml": ("context: 2048", "context: 1024")}, []),
]


@pytest.mark.parametrize(
    ("edits", "expected"), [c[1:] for c in CONTEXT_CASES], ids=[c[0] for c in CONTEXT_CASES]
)
def test_plan_refuses_a_context_the_model_does_not_allow(
    edits: dict[str, tuple[str, str]], expected: list[str]
) -> None:
    plan = predicted(example(edits), True, TINYLLAMA)
    # the alias coder moves too: its entry carries the seat's context to clients
    (action,) = [a for a in plan.actions if a.target == "coder" and "seat" in a.kind.value]
    assert action.kind is ActionKind.REPLACE_SEAT
    assert messages(plan, "coder") == expected


def test_plan_refuses_a_concurrency_outside_the_band() -> None:
    """flash at 32,768 tokens keeps 10 GiB: 109,216 KV tokens, 3.33x (the gate's verdict)."""
    fleet = example({"seats/flash.yaml": ("context: 65536", "context: 32768")})
    plan = predicted(fleet, False, FLASH_MODEL)
    assert (
        "KV 10GiB -> 109,216 KV tokens (estimate), max concurrency 3.33x at 32,768, outside "
        "its band 1.2x..2.5x, so "
        "the health gate would roll it back: set kv_cache_bytes between 3.7GiB and 7.5GiB, "
        "or run fleet fit flash"
    ) in messages(plan, "flash")
    (action,) = [a for a in plan.actions if a.target == "flash" and "seat" in a.kind.value]
    assert action.prediction is not None
    assert (action.prediction.kv_tokens, action.prediction.source) == (109216, "estimate")


def test_plan_refuses_a_budget_below_one_request() -> None:
    fleet = example({"seats/flash.yaml": ("kv_cache_bytes: 10GiB", "kv_cache_bytes: 4GiB")})
    assert (
        "KV 4GiB -> 43,680 KV tokens (estimate), less than one 65,536-token request needs, "
        "so vLLM refuses to start: set kv_cache_bytes between 7.3GiB and 15.0GiB, or run "
        "fleet fit flash"
    ) in messages(predicted(fleet, False, FLASH_MODEL), "flash")


def _beside_char_rp(fleet: DesiredFleet, **budget: object) -> DesiredFleet:
    new = fleet.seats["char-rp"].model_copy(
        update={
            "name": "scribe",
            "served_name": "scribe",
            "port": 8017,
            "aliases": (),
            "model": "/models/Llama-3.1-8B-Instruct",
            "context": 32768,
            "gpu_memory_utilization": None,
            **budget,
        }
    )
    return fleet.model_copy(update={"seats": {**fleet.seats, "scribe": new}})


OVERCOMMIT = [
    (
        "kv-budget",
        {"kv_cache_bytes": 8 * 1024**3},
        "needs ~19,456 MiB of tower GPU 1 (97,887 MiB), but the seats that stay beside it "
        "leave 16,856 MiB (char-rp 78,309 MiB, embed 1,361 MiB, rerank 1,361 MiB); over by "
        "2,600 MiB: set kv_cache_bytes to at most 5,592MiB, or run fleet fit scribe",
    ),
    (
        "utilization-share",
        {"gpu_memory_utilization": 0.3},
        "gpu_memory_utilization 0.3 asks 29,366 MiB of tower GPU 1 (97,887 MiB), but the "
        "seats that stay beside it leave 16,856 MiB (char-rp 78,309 MiB, embed 1,361 MiB, "
        "rerank 1,361 MiB): set gpu_memory_utilization to at most 0.172, or run fleet fit "
        "scribe",
    ),
]


@pytest.mark.parametrize(
    ("budget", "message"), [c[1:] for c in OVERCOMMIT], ids=[c[0] for c in OVERCOMMIT]
)
def test_plan_refuses_a_seat_the_gpu_cannot_hold_beside_char_rp(
    budget: dict[str, object], message: str
) -> None:
    """nvidia-smi shows half of GPU 1 free, but char-rp's 0.8 share and its neighbours stay."""
    observed = engines_as_logged(in_sync(example()), REAL_WEIGHTS)
    tower = observed.hosts["tower"]
    llama = observed.hosts["rig"].models["/models/Llama-3.1-8B-Instruct"]
    models = {**tower.models, llama.path: llama}
    observed.hosts["tower"] = tower.model_copy(update={"models": models})
    plan = make_plan(_beside_char_rp(example(), **budget), observed)
    assert [(a.kind, a.target) for a in plan.actions if a.wave == 1] == [
        (ActionKind.CREATE_SEAT, "scribe")
    ]
    assert messages(plan, "scribe") == [message]
    assert make_plan(example(), observed).blockers == ()


SPECULATIVE = [
    (
        "mtp-on-a-model-without-mtp-layers",
        "seats/flash.yaml",
        ("num_tokens: 3", "num_tokens: 2"),
        "flash",
        [
            "speculative method mtp drafts with the model's own MTP layers, but config.json "
            "of /models/Qwen3-30B-A3B-NVFP4 (qwen3_moe, Qwen3MoeForCausalLM) has none: drop "
            "speculative, or draft with a separate model (eagle3, draft_model) named in "
            "draft_model"
        ],
    ),
    (
        "mtp-on-a-model-with-mtp-layers",
        "seats/sec.yaml",
        ("num_tokens: 3", "num_tokens: 2"),
        "sec",
        [],
    ),
    (
        "drafter-missing",
        "seats/sec.yaml",
        ("method: qwen3_5_mtp", "method: eagle3\n  draft_model: /models/eagle3-head"),
        "sec",
        ["draft model /models/eagle3-head (eagle3) does not exist on tower"],
    ),
]


@pytest.mark.parametrize(
    ("rel", "edit", "target", "expected"),
    [c[1:] for c in SPECULATIVE],
    ids=[c[0] for c in SPECULATIVE],
)
def test_plan_refuses_a_speculative_method_the_model_cannot_run(
    rel: str, edit: tuple[str, str], target: str, expected: list[str]
) -> None:
    observed = with_models(in_sync(example()), only=(FLASH_MODEL, "/models/Qwen3.5-27B"))
    tower = observed.hosts["tower"]
    observed.hosts["tower"] = tower.model_copy(update={"missing_paths": ("/models/eagle3-head",)})
    plan = make_plan(example({rel: edit}), observed)
    assert [m for m in messages(plan, target) if "speculative" in m or "draft" in m] == expected
