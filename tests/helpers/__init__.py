"""Helpers shared by integration, chaos and benchmark tests (import as `tests.helpers.<module>`)."""
