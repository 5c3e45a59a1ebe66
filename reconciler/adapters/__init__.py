"""Adapters to outside systems (SSH, HTTP over SSH channels, Git); each maps its library's
errors to `FleetError`s."""
