"""The PostgreSQL server the session-store tests run against: real, and a database per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.postgres import Cluster, start_cluster

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (dcode[postgres])")


def test_each_test_gets_an_empty_database_of_its_own(
    postgres_url: str, postgres_cluster: Cluster
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        assert tables == (0,)
        connection.execute("CREATE TABLE marks (n int)")
        connection.execute("INSERT INTO marks VALUES (7)")
        assert connection.execute("SELECT n FROM marks").fetchall() == [(7,)]
        name = connection.execute("SELECT current_database()").fetchone()
    assert name is not None and name[0] != "postgres"
    with psycopg.connect(postgres_cluster.url) as maintenance:
        assert maintenance.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (name[0],)
        ).fetchone() == (1,)


def test_starting_without_a_server_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tests.support.postgres.server_binaries", lambda: None)
    with pytest.raises(RuntimeError, match="no PostgreSQL server is installed"):
        start_cluster(tmp_path)
