"""Append-only models: rows can be inserted, never updated or deleted through Django.

PostgreSQL triggers (see the migrations) enforce the same below the ORM, so a raw UPDATE fails too.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from registry.exceptions import ImmutableRecord


class AppendOnlyQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableRecord(f"{self.model.__name__} rows are append-only: no updates")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise ImmutableRecord(f"{self.model.__name__} rows are append-only: no deletes")


class AppendOnlyModel(models.Model):
    """Base for evidence: save() only inserts, delete() always refuses."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableRecord(f"{type(self).__name__} {self.pk} is evidence and cannot be changed")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ImmutableRecord(f"{type(self).__name__} {self.pk} is evidence and cannot be deleted")
