"""Dataset export: row building, deterministic file writers and the manifest.

``rows`` and ``writers`` are plain Python (no Django) so the file format can be checked and reused
on its own; ``build`` reads the database and drives them.
"""
