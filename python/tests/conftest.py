"""Shared set-up of the package's own tests: the repository root and the plugin."""

import os

import pytest

pytest_plugins = ["syncroll.pytest_plugin", "pytester"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


@pytest.fixture
def repo_root():
    return ROOT
