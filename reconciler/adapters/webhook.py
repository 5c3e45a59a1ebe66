"""Notifications: a JSON POST per event to the webhook fleet.yaml names, off the loop.

Events are queued and sent by a daemon thread, each retried a few times with a pause;
a full queue drops the newest event rather than wait, so a slow or dead receiver never
blocks the reconcile loop; its pauses wait on the loop's `Clock`. The URL comes from the
environment (`${ENV_VAR}`) and never reaches any output.
"""

from __future__ import annotations

import json
import queue
import threading
import urllib.error
import urllib.request
from typing import Any

from fleet.errors import FleetError
from reconciler.adapters import environment
from reconciler.clock import SYSTEM_CLOCK, Clock

RETRIES, PAUSE, TIMEOUT = 3, 2.0, 5.0


def webhook_url(setting: str | None) -> str | None:
    """The URL a `${ENV_VAR}` setting names; FleetError if the variable is unset."""
    if not setting:
        return None
    return environment.resolve(setting, "reconcile.webhook_url", "the webhook URL", FleetError)


class Notifier:
    """Sends events in the background; `send` never blocks."""

    def __init__(self, url: str | None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.url, self.clock = url, clock
        self.sent: list[dict[str, Any]] = []
        self.failed = 0
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=100)
        if url:
            threading.Thread(target=self._work, daemon=True, name="webhook").start()

    def send(self, event: dict[str, Any]) -> None:
        """Queue one event (dropped if the queue is full or there is no webhook)."""
        if self.url:
            try:
                self._queue.put_nowait(event)
            except queue.Full:
                self.failed += 1

    def drain(self, timeout: float = 10.0) -> None:
        """Wait (bounded) until queued events are sent, e.g. before the process exits.

        An event the worker has taken but not yet posted has left the queue: it counts as
        unfinished until its post ends, so drain waits for it too.
        """
        deadline = self.clock.monotonic() + timeout
        while self.url and self._queue.unfinished_tasks and self.clock.monotonic() < deadline:
            self.clock.sleep(0.05)

    def _work(self) -> None:
        while True:
            event = self._queue.get()
            if self._post(event):
                self.sent.append(event)
            else:
                self.failed += 1
            self._queue.task_done()

    def _post(self, event: dict[str, Any]) -> bool:
        assert self.url is not None
        body = json.dumps(event, sort_keys=True).encode()
        for attempt in range(RETRIES):
            request = urllib.request.Request(
                self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
                    if 200 <= reply.status < 300:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            self.clock.sleep(PAUSE * (attempt + 1))
        return False
