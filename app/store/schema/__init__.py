"""The chat database's schema.

- migrations.py: the steps from each schema version to the next, and the text folding the search index holds.
"""
