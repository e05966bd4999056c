"""The browsing pages' users and small fleet of runs (tests/registry/web/conftest.py), read here by the
catalogue's selectors: imported, not copied, so both folders test the same fleet."""

from tests.registry.web.conftest import admin_user, fleet, submitter  # noqa: F401 (fixtures pytest finds by name)
