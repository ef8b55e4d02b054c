"""Backups of the whole site: the database, the media folder and a manifest that checks both.

A backup is a folder of three files: the database (:mod:`.strategies`: a PostgreSQL custom-format
dump, or a copy of the SQLite file), ``media.tar`` (every file under MEDIA_ROOT, :mod:`.media`)
and ``manifest.json`` (:mod:`.manifest`: when, the applied migrations, both files' SHA-256, row
counts, and stored file sets such as dataset versions with their checksums). The manifest is
written last, so a folder without one is an unfinished backup. Restoring checks the SHA-256s
before anything is written, and afterwards every stored file set (:mod:`.verify`).
"""
