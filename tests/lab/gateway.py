"""The gateway host's LiteLLM proxy and its nginx front: the initial hand-kept config,
the front's config, and how they run.

The proxies (litellm[proxy] pinned in its own venv, see install.sh) run under
runtime/gateway_supervisor.py inside the gateway host's mount namespace, reading that
host's /etc/litellm/config.yaml, on <gateway address>:4001 (at first) or :4002. nginx
(Debian's nginx-light, /etc/nginx of the host) listens on :4000 and routes to the port its
upstream file names. `fleet-gateway-restart` restarts the running proxy in place;
`fleet-gateway-proxy start|stop PORT` starts (ready) or stops (exited) one proxy.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from tests.waiting import poll

from .cache import cached

LITELLM_VENV = cached("litellm-venv", "FLEET_LAB_LITELLM_VENV")
CONFIG_PATH = "/etc/litellm/config.yaml"
UPSTREAM_PATH = "/etc/nginx/fleet/litellm-upstream.conf"  # as desired/gateway.yaml names it
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
        # 0: every proxy a fresh interpreter (see runtime/gateway_supervisor.py)
        "FLEET_LAB_LITELLM_FORK": os.environ.get("FLEET_LAB_LITELLM_FORK", "1"),
    }


def wait_ready(url: str, timeout: float = 120.0) -> bool:
    """Poll the proxy's readiness endpoint until it answers 200 (False after `timeout`)."""

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/health/readiness", timeout=2) as response:
                return response.status == 200
        except urllib.error.HTTPError as err:
            err.close()
        except (urllib.error.URLError, OSError):
            pass
        return False

    return bool(poll(ready, timeout, interval=0.3))


def upstream_text(address: str, port: int) -> str:
    """The front's upstream file as the operator first wrote it: the proxy on `port`."""
    return (
        f"# the LiteLLM proxy nginx sends to (fleet rewrites this line)\nserver {address}:{port};\n"
    )


def nginx_conf(address: str, port: int, root: Path, run_dir: Path) -> str:
    """The gateway host's /etc/nginx/nginx.conf: a front on address:port for the proxies,
    with the settings measured to lose no request across a switch (LAB-NOTES)."""
    return f"""\
# The gateway's front: routes every request to the live LiteLLM proxy.
daemon off;
user root;
worker_processes 1;
pid {run_dir}/nginx.pid;
error_log {root}/logs/nginx-error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {root}/nginx-temp/body;
    proxy_temp_path {root}/nginx-temp/proxy;
    upstream litellm {{
        include {UPSTREAM_PATH};
        keepalive 16;
    }}
    server {{
        listen {address}:{port};
        client_max_body_size 16m;
        location / {{
            proxy_pass http://litellm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 600s;
        }}
    }}
}}
"""
