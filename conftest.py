"""The whole suite's build step (compat_tests/prerequisites.py): what the selected tests need is
built or downloaded once, before the first test, whichever folders the run covers."""

pytest_plugins = ["compat_tests.prerequisites"]
