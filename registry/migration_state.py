"""Whether the database holds this benchreg's tables: the migrations not yet applied to it. Asked by `benchreg
serve` before it starts, by /readyz, and by a command that failed from the database (registry/cli.py, the MLPerf
import's retries) to tell a database never migrated from one gone away."""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def pending_migrations() -> list[str]:
    """Migrations not yet applied to the default database, as 'app.name', in the order they would run."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
