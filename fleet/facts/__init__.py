"""Fact parsers: each turns the text one command printed into a frozen model.

A parser is a pure function `parse(text) -> Model`: no I/O, and it never raises on
odd input (a missing fact is None, an unreadable line is skipped).
"""
