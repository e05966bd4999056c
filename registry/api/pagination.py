from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination


class StrictCursor(CursorPagination):
    """Cursor pages whose `limit` is checked, not silently replaced: 1..max_page_size, else 400 (docs/api.md).

    An unknown or tampered `cursor` is 404 ("Invalid cursor"), as DRF answers it.
    """

    page_size_query_param = "limit"
    page_size: int  # each subclass sets both: the limit is checked against them
    max_page_size: int

    def decode_cursor(self, request: Any) -> Any:
        if request.query_params.get(self.cursor_query_param) == "":
            raise ValidationError({self.cursor_query_param: ["must not be empty (leave it out for the first page)"]})
        return super().decode_cursor(request)

    def get_page_size(self, request: Any) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"an integer from 1 to {self.max_page_size}"]})
        return int(raw)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                    "default": self.page_size,
                }
        return parameters


class NewestFirstCursor(StrictCursor):
    """Stable cursor pages over an append-only table: ids only grow, so no page shifts under a reader."""

    ordering = "-id"
    page_size = 50
    max_page_size = 500
