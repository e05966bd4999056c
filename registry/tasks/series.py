"""Series tasks: the beat tick that fires due schedules (and lets pending runs join their series)."""

from __future__ import annotations

from celery import shared_task

from registry.services.schedule_firing import schedules_tick as _tick


@shared_task(name="registry.tasks.series.schedules_tick", ignore_result=True)
def schedules_tick() -> dict[str, int]:
    """Celery beat: fire due schedules exactly once each (safe with several beat processes)."""
    return _tick()
