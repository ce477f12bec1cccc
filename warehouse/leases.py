"""Leases with expiry in a plain PostgreSQL table beside the lake catalog.

One row per lease name (`collect:vastai`, `retention`): who holds it and until when, by the
PostgreSQL server's clock, so collectors on machines with skewed clocks still agree. Taking a
lease is one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` statement: it succeeds only when the
lease is free, expired, or already ours (then it is renewed). A holder that dies simply stops
renewing; the lease is anyone's once it expires.

Not in the lake itself: DuckLake has no `ON CONFLICT`, and a lease must not wait behind the
cluster write lock.
"""

from __future__ import annotations

from datetime import timedelta

from warehouse.lake import cluster_lock, pg_connection

__all__ = ["release_lease", "take_lease"]

_DDL = """
CREATE TABLE IF NOT EXISTS gpuprices_leases (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    expires_at  timestamptz NOT NULL
)
"""
_TAKE = """
INSERT INTO gpuprices_leases AS l (name, holder, expires_at)
VALUES (%(name)s, %(holder)s, now() + %(ttl_s)s * interval '1 second')
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE l.holder = EXCLUDED.holder OR l.expires_at < now()
RETURNING holder
"""
_ready: set[str] = set()


def _ensure_table(conninfo: str) -> None:
    if conninfo in _ready:
        return
    with cluster_lock(conninfo, "gpuprices:lease-ddl"), pg_connection(conninfo) as pg:
        pg.execute(_DDL)
        pg.commit()
    _ready.add(conninfo)


def take_lease(conninfo: str, name: str, holder: str, ttl: timedelta) -> bool:
    """Take or renew lease `name` for `holder` for `ttl`; False when another holds it."""
    _ensure_table(conninfo)
    with pg_connection(conninfo) as pg:
        row = pg.execute(
            _TAKE, {"name": name, "holder": holder, "ttl_s": ttl.total_seconds()}
        ).fetchone()
        pg.commit()
    return row is not None


def release_lease(conninfo: str, name: str, holder: str) -> None:
    """Give lease `name` up now (on a clean shutdown), if `holder` still has it."""
    _ensure_table(conninfo)
    with pg_connection(conninfo) as pg:
        pg.execute("DELETE FROM gpuprices_leases WHERE name = %s AND holder = %s", [name, holder])
        pg.commit()
