"""What a handler of the stand-in answers, and GitHub's paging."""

from __future__ import annotations

from typing import Any, TypeVar

Answer = tuple[int, Any, dict[str, str]]
T = TypeVar("T")


def not_found() -> Answer:
    return 404, {"message": "Not Found"}, {}


def paging(query: dict[str, str]) -> tuple[int, int]:
    """The query's per_page and page, GitHub's defaults where missing."""
    return int(query.get("per_page", 30)), int(query.get("page", 1))


def page_of(items: list[T], per_page: int, page: int) -> list[T]:
    """Page `page` (from 1) of `items`, `per_page` a page."""
    return items[(page - 1) * per_page : page * per_page]
