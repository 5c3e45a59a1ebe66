"""Renderers: deterministic text out of specs and facts (compose, gateway, inventory)."""
