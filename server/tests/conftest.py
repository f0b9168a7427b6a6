"""Async tests run through bookkeeper's hook."""

from bookkeeper.tests.conftest import pytest_pyfunc_call  # noqa: F401  (async test runner)
