"""The JSON body parser of the judging API: the shared JSON limits, errors as 400s."""

from __future__ import annotations

from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.importing.limits import JsonInputError, json_loads


class BoundedJSONParser(JSONParser):
    """Like DRF's JSON parser, with the readers' checks: depth, NUL, lone surrogates, NaN.

    DRF's own parser lets a 100,000-deep body overflow the stack (a 500) and passes NUL
    characters and lone surrogates on to the database.
    """

    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        try:
            # The texts are checked by the predictions reader, which names the line and field.
            return json_loads(stream.read(), check_text=False)
        except JsonInputError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
