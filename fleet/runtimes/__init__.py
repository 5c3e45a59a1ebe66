"""Host runtimes: how a host runs its seats (docker compose today), one module each."""
