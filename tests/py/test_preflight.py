"""Preflight answers for every capture backend capbench knows."""

from __future__ import annotations

import pytest
from capbench import preflight
from capbench.trial import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_has_a_status_with_a_reason(backend):
    ok, why = preflight.backend_status(backend)
    assert isinstance(ok, bool)
    assert why and why != "unknown backend"


def test_unknown_backend():
    assert preflight.backend_status("pfring") == (False, "unknown backend")
