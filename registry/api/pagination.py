from rest_framework.pagination import CursorPagination


class NewestFirstCursor(CursorPagination):
    """Stable cursor pages over an append-only table: ids only grow, so no page shifts under a reader."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500
