"""A credential the gateway's config holds (a foreign entry's `api_base` with
`user:password@`) reaches neither the committed inventory nor what plan prints."""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli.fake_fleet import FOREIGN_GATEWAY, GATEWAY_CONFIG, make_fleet

PASSWORD = "Zq8wLx3vNp2Rt7Ks"
WITH_CREDENTIALS = FOREIGN_GATEWAY + (
    "  - model_name: overflow\n"
    "    litellm_params:\n"
    "      model: openai/gpt-4o\n"
    f"      api_base: https://ops:{PASSWORD}@llm.example/v1\n"
    "  - model_name: coder\n"
    "    litellm_params:\n"
    "      model: hosted_vllm/coder\n"
    f"      api_base: http://ops:{PASSWORD}@127.0.0.11:8099/v1\n"
    f"      api_key: {PASSWORD}\n"
)


def test_gateway_credentials_are_redacted_in_inventory_and_plan(tmp_path: Path) -> None:
    fake = make_fleet(tmp_path)
    fake.hosts["gateway"].files[GATEWAY_CONFIG] = WITH_CREDENTIALS
    inventory = fake.fleet("inventory", "--write")
    plan = fake.fleet("plan")
    saved = fake.fleet("plan", "--json", "--out", str(tmp_path / "plan.json"))
    written = [p.read_text() for p in (fake.root / "inventory").iterdir()]
    written.append((tmp_path / "plan.json").read_text())
    assert inventory.returncode == 0, inventory.stderr
    assert "https://ops:***@llm.example/v1" in "".join(written)
    assert "adopt the hand-written entry: http://ops:***@127.0.0.11:8099/v1" in plan.stdout
    for text in (*written, plan.stdout, plan.stderr, saved.stdout, inventory.stdout):
        assert PASSWORD not in text
