"""Applications written only against migrator's public API, each run as its own process by the acceptance
tests (tests/integration/test_app_*.py), the way a user's program runs."""
