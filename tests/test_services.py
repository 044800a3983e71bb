"""The test session's own services (tests/services.py): what it says when it cannot start
PostgreSQL, so a fresh machine's `make test` skips those tests saying why."""

from __future__ import annotations

import pytest

from tests import services


def test_a_given_server_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services.PG_ENV, "postgresql://somewhere/db")
    found = services.start_postgres()
    assert found.available and found.stop is None and services.PG_ENV in found.how


def test_no_local_binaries_says_how_to_get_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(services.PG_ENV, raising=False)
    monkeypatch.delenv(services.START_PG_ENV, raising=False)
    monkeypatch.setattr(services, "_pg_bin", lambda: None)
    found = services.start_postgres()
    assert not found.available
    assert "apt-get install postgresql" in found.how and services.PG_ENV in found.how


def test_starting_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(services.PG_ENV, raising=False)
    monkeypatch.setenv(services.START_PG_ENV, "0")
    found = services.start_postgres()
    assert not found.available and "TRACKWAY_TEST_START_POSTGRES=0" in found.how


def test_the_other_servers_say_which_script_starts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    for _, env, _ in services.OTHERS:
        monkeypatch.delenv(env, raising=False)
    missing = [s for s in services.others() if s.name != "Chromium"]
    assert all(not s.available and ".ci/" in s.how and s.env in s.how for s in missing)
