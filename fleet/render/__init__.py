"""What apply writes: compose files and the gateway config splice (deterministic text)."""
