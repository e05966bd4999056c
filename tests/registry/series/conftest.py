"""The real-worker fixtures (an enrolled agent with its `benchreg agent start` workers, the Redis broker)."""

from tests.registry.agents.test_real_worker import broker, enrolled  # noqa: F401 (fixtures used by name)
