"""Fakes at fleet's own seams for unit tests: `host.FakeHost` is an in-memory
`reconciler.host.HostSession` (its containers and fact-script output in `containers`)."""
