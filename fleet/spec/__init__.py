"""The desired fleet: models, loading with file:line, validation rules and their messages."""
