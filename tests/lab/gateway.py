"""The gateway host's LiteLLM proxy: its initial hand-kept config and how it runs.

The proxy (litellm[proxy] pinned in its own venv, see install.sh) runs under
runtime/gateway_supervisor.py inside the gateway host's mount namespace, reading that
host's /etc/litellm/config.yaml and listening on <gateway address>:4000.
`fleet-gateway-restart` (over SSH on the gateway) restarts it and waits until ready.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path

LITELLM_VENV = Path(os.environ.get("FLEET_LAB_LITELLM_VENV", "/opt/fleet-lab/litellm-venv"))
CONFIG_PATH = "/etc/litellm/config.yaml"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# A realistic, drifted, hand-edited file: comments in several places, settings blocks,
# a cloud entry fleet never manages, and two aliases pointing at ports where nothing
# listens any more.
INITIAL_CONFIG = """\
# LiteLLM proxy on the gateway box -- edited by hand, see the ops wiki (out of date).
# Keys come from the environment; never paste one here.

model_list:
  # --- cloud overflow, not ours: billed to the team card ---
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_key: os.environ/OPENAI_API_KEY

  # old security seat (moved to GPU 0 three weeks ago, port changed since)
  - model_name: sec-old
    litellm_params:
      model: hosted_vllm/sec
      api_base: http://127.0.0.11:8098/v1
  - model_name: code-legacy   # TODO remove once the IDE plugin is updated
    litellm_params:
      model: hosted_vllm/coder
      api_base: http://127.0.0.11:8099/v1
      timeout: 30

router_settings:
  routing_strategy: simple-shuffle   # only one deployment per alias anyway
  num_retries: 1
  timeout: 120

litellm_settings:
  drop_params: true
  request_timeout: 300
  # fallbacks: [{"sec": ["chat"]}]   # re-enable when chat is back

general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
"""


def litellm_command(address: str, port: int) -> list[str]:
    """The proxy's command line."""
    return [
        str(LITELLM_VENV / "bin" / "litellm"),
        "--config",
        CONFIG_PATH,
        "--host",
        address,
        "--port",
        str(port),
        "--num_workers",
        "1",
    ]


def proxy_env(master_key: str) -> dict[str, str]:
    """Environment of the proxy: its master key, no network fetches, no telemetry."""
    return {
        "PATH": f"{LITELLM_VENV / 'bin'}:{SYSTEM_PATH}",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "LITELLM_MASTER_KEY": master_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOG": "INFO",
        "PYTHONUNBUFFERED": "1",
    }


def wait_ready(url: str, timeout: float = 120.0) -> bool:
    """Poll the proxy's readiness endpoint."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health/readiness", timeout=2) as response:
                if response.status == 200:
                    return True
        except urllib.error.HTTPError as err:
            err.close()
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    return False
