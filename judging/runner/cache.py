"""The exact cache key of a judge call: SHA-256 of the canonical JSON of every part of it.

Everything that can change the answer is part of the key (model, template hash, image hash and
size limit, question, both responses, criterion, order, run index, every generation setting the
request carries), so a stored answer is reused only for the same request and a different model
never reads another's entries. The server is not: replicas of one model share their answers, and
moving a judge to another host re-asks nothing. (Version 2 dropped the server from the key.)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Bumped when the request layout changes, so old entries are no longer reused.
KEY_VERSION = 2


def canonical_json(parts: dict[str, Any]) -> str:
    """Sorted keys, no spaces, UTF-8 kept: one text per value."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_key(parts: dict[str, Any]) -> str:
    """The SHA-256 (hex) of ``parts`` as canonical JSON, with the key layout's version."""
    payload = canonical_json({"key_version": KEY_VERSION, **parts})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def normalise_base_url(url: str) -> str:
    """The server's API root without a trailing slash or a ``/chat/completions`` suffix."""
    url = url.strip().rstrip("/")
    return url.removesuffix("/chat/completions").rstrip("/")
