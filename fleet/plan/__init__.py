"""Decisions: the diff of desired against observed, blockers, actions, the plan and its
fingerprint, and the health gate apply polls. Imports no report."""
