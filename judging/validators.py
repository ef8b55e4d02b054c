"""Field validators of the judge configs: where a judge may be called, and with which key.

The rules themselves live in ``core.outbound`` (one home for the address and key rules of every
outbound call); these wrap them as Django validators.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from core.outbound import api_key_env_problem, base_url_problem

#: At most this many replicas beside the base URL.
MAX_REPLICAS = 32


def _sentence(problem: str) -> str:
    """A rule's message as a form shows it: a capital first letter and a full stop."""
    return problem[0].upper() + problem[1:].rstrip(".") + "."


def validate_base_url(value: str) -> None:
    problem = base_url_problem(value)
    if problem:
        raise ValidationError(_sentence(problem))


def validate_replica_urls(value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
        raise ValidationError("Give the replicas as a list of URLs.")
    if len(value) > MAX_REPLICAS:
        raise ValidationError(f"At most {MAX_REPLICAS} replicas.")
    for number, url in enumerate(value, start=1):
        problem = base_url_problem(url)
        if problem:
            raise ValidationError(f"Replica {number} ({url[:80]}): {problem}.")


def validate_api_key_env(value: str) -> None:
    problem = api_key_env_problem(value) if value else None
    if problem:
        raise ValidationError(_sentence(problem))


def validate_json_object(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValidationError('Give a JSON object, e.g. {"key": "value"}.')
