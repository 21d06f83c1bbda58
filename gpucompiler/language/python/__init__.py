"""Python's own language: numbers, tuples and indexing, records, lists, dicts, builtins, keyword calls."""
