"""What people read: the plan as text, Markdown and JSON, the inventory, the JSON schemas."""
