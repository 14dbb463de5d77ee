"""The command line as one program: it starts as a module, every command ends a failure in one line on stderr
with the exit code of its kind (memsub.exit_codes), and commands whose output is data print it as JSON on asking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memsub import exit_codes
from memsub.cli import main as cli

from helpers import TENANT_A, refused_dsn

ROOT = Path(__file__).resolve().parents[2]


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


@pytest.mark.parametrize("module", ["memsub", "memsub.cli"])
def test_the_cli_starts_as_a_module(module):
    result = _python("-m", module, "--help")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert {"migrate", "packet", "search", "graph", "verify", "ingest"} <= set(result.stdout.split())


# Arguments that get each command past its own argument parsing to the point where it connects.
ARGUMENTS: dict[str, list[str]] = {
    "packet get": ["00000000-0000-0000-0000-000000000001"],
    "packet thread": ["00000000-0000-0000-0000-000000000001"],
    "packet lineage": ["00000000-0000-0000-0000-000000000001"],
    "packet write": ["-"],
    "search": ["hdpe", "--embedder", "hashing"],
    "graph traverse": ["acme"],
    "graph neighbourhood": ["acme"],
    "ingest": ["README.md"],
    "login-timeouts": ["memsub_test_app"],
    "api-key revoke": ["mk_0000000000000000"],
    "vector-index rebuild": ["--type", "content", "--m", "24", "--ef-construction", "128"],
    "tenant erase": [str(TENANT_A), "--yes"],
}
TENANT_COMMANDS = {"packet get", "packet thread", "packet lineage", "packet write", "search", "graph traverse",
                   "graph neighbourhood", "ingest", "api-key create", "mcp"}
WITHOUT_SERVER = {"sql", "db start", "db stop", "db status", "db url"}


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix}{name} ")
        else:
            found.append((f"{prefix}{name}", command))
    return found


SERVER_COMMANDS = [name for name, _ in _commands(cli) if name not in WITHOUT_SERVER]


@pytest.mark.parametrize("name", SERVER_COMMANDS)
def test_every_command_reports_an_unreachable_server_in_one_line_with_exit_3(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = [*name.split(), *ARGUMENTS.get(name, []), "--dsn", refused_dsn()]
    if name in TENANT_COMMANDS:
        args += ["--tenant", str(TENANT_A)]
    result = CliRunner().invoke(cli, args, input="")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == exit_codes.CANNOT_CONNECT, result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith("memsub: server ")]
    assert len(lines) == 1 and lines[0].startswith("memsub: "), result.stderr


def test_a_login_without_the_privilege_gets_exit_4_in_one_line(db):
    result = CliRunner().invoke(cli, ["login-timeouts", "memsub_test_analyst", "--dsn", db.dsn("app")])
    assert result.exit_code == exit_codes.NO_PRIVILEGE, result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith("memsub: server ")]
    assert len(lines) == 1 and "Traceback" not in result.output


def test_an_unknown_login_is_bad_input(db):
    result = CliRunner().invoke(cli, ["login-timeouts", "no_such_login_here", "--dsn", db.dsn()])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert "no_such_login_here" in result.stderr


def test_a_login_name_with_a_byte_that_is_not_utf8_is_bad_input_naming_it(db):
    # Python reads the byte as an unpaired surrogate, which has no UTF-8 form to look the role up with
    result = CliRunner().invoke(cli, ["login-timeouts", "app\udcff", "--dsn", db.dsn()])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert "field login" in result.stderr and "surrogate" in result.stderr and "codec" not in result.stderr


def test_commands_that_print_data_print_json_on_asking(db, tmp_path):
    runner = CliRunner()
    timeouts = runner.invoke(cli, ["login-timeouts", "memsub_test_analyst", "--dsn", db.dsn(), "--json"])
    assert timeouts.exit_code == 0, timeouts.output
    row = json.loads(timeouts.stdout.splitlines()[0])
    assert row["login"] == "memsub_test_analyst" and row["statement_timeout"] > 0

    views = runner.invoke(cli, ["refresh-views", "--dsn", db.dsn("platform_admin"), "--json"])
    assert views.exit_code == 0, views.output
    refreshed = [json.loads(line) for line in views.stdout.splitlines()]
    assert refreshed and {"view_name", "status", "method", "duration_ms", "row_count"} <= set(refreshed[0])

    (tmp_path / "a.md").write_text("# A\n\nHDPE pellets.\n")
    ingested = runner.invoke(cli, ["ingest", str(tmp_path / "a.md"), "--dsn", db.dsn("app"),
                                   "--tenant", str(TENANT_A), "--json"])
    assert ingested.exit_code == 0, ingested.output
    result = json.loads(ingested.stdout.splitlines()[0])
    assert result["path"].endswith("a.md") and result["status"] == "created"

    status = runner.invoke(cli, ["db", "status", "--data-dir", str(tmp_path / "none"), "--json"])
    assert status.exit_code == 3 and json.loads(status.stdout)["state"] == "not initialized"


@pytest.mark.parametrize("option", ["--tenant", "--org", "--user"])
@pytest.mark.parametrize("name", sorted(TENANT_COMMANDS))
def test_a_context_id_that_is_no_uuid_is_refused_naming_the_option_before_connecting(name, option, monkeypatch):
    """The server would refuse it too, but only once reached, and without naming the option."""
    monkeypatch.chdir(ROOT)
    args = [*name.split(), *ARGUMENTS.get(name, []), "--dsn", refused_dsn(), "--tenant", str(TENANT_A)]
    args += [option, "acme-corp"]
    result = CliRunner().invoke(cli, args, input="")
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert option in result.stderr and "'acme-corp' is not a UUID" in result.stderr, result.stderr


@pytest.mark.parametrize("query", ["", "  ", "\t"], ids=["empty", "spaces", "tab"])
def test_a_blank_search_query_is_refused_before_connecting(query):
    """It would be embedded and searched all the same (an embedding of nothing still points somewhere)."""
    result = CliRunner().invoke(cli, ["search", query, "--embedder", "hashing", "--dsn", refused_dsn(),
                                      "--tenant", str(TENANT_A)])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert result.stderr.splitlines() == ["memsub: QUERY must not be blank (field query)"], result.stderr


def _error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if not line.startswith("memsub: server ")]


def test_a_malformed_migrate_target_is_bad_input(db):
    result = CliRunner().invoke(cli, ["migrate", "--dsn", db.dsn(), "--to", "abc", "--json"])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    payload = json.loads(result.stdout)
    assert payload["exit_code"] == exit_codes.BAD_INPUT and payload["field"] == "to", payload
    assert len(_error_lines(result)) == 1, result.stderr


@pytest.mark.parametrize("option", ["--from", "--to"])
def test_a_malformed_sql_version_is_bad_input(option):
    result = CliRunner().invoke(cli, ["sql", option, "abc"])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert _error_lines(result) == [f"memsub: {option} is not a semantic version (MAJOR.MINOR.PATCH): 'abc' "
                                    f"(field {option[2:]})"], result.stderr


@pytest.mark.parametrize(("arguments", "line"), [
    (["sql", "--from", "9.9.9"], "memsub: --from 9.9.9: no such migration is shipped (field from)"),
    (["sql", "--to", "9.9.9"], "memsub: --to 9.9.9: no such migration is shipped (field to)"),
    (["sql", "--from", "2.0.0", "--to", "1.1.0"], "memsub: --from must not be newer than --to (field from)"),
    (["migrate", "--dsn", "REFUSED", "--to", "9.9.9"],
     "memsub: --to 9.9.9: no such migration is shipped (field to)"),
], ids=["sql-from", "sql-to", "sql-backwards", "migrate-to"])
def test_a_version_no_migration_has_is_bad_input_before_connecting(arguments, line):
    arguments = [refused_dsn() if argument == "REFUSED" else argument for argument in arguments]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert _error_lines(result) == [line], result.stderr


@pytest.mark.parametrize("command", ["verify", "repair"])
def test_verify_and_repair_that_cannot_compare_print_the_error_object_and_one_line(db, command):
    """Exit 2 (the comparison itself was impossible), in the shape every command prints an error in."""
    result = CliRunner().invoke(cli, [command, "--dsn", db.dsn(), "--reference-dsn", "host=/nonexistent dbname=x",
                                      "--json"])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    payload = json.loads(result.stdout)
    assert payload["ok"] is False and payload["exit_code"] == exit_codes.BAD_INPUT, payload
    assert {"error", "message", "sqlstate", "field"} <= payload.keys(), payload
    assert payload["message"].startswith(f"cannot {command}: "), payload
    lines = _error_lines(result)
    assert len(lines) == 1 and lines[0].startswith(f"memsub: cannot {command}: "), result.stderr


def test_every_dsn_option_that_names_its_defaults_names_the_whole_resolution_order():
    """README and docs/operations.md: --dsn, MEMSUB_DSN, DATABASE_URL, libpq's environment, then the embedded
    cluster, for every command; a --dsn help that lists its defaults lists all of them."""
    whole = "MEMSUB_DSN, DATABASE_URL, libpq's PG* environment, then the embedded cluster"
    partial = []
    for name, command in _commands(cli):
        for option in command.params:
            text = " ".join((option.help or "").split()) if isinstance(option, click.Option) else ""
            if "--dsn" in option.opts and "MEMSUB_DSN" in text and whole not in text:
                partial.append((name, text))
    assert partial == []


CONTEXT_VARIABLES = {"--tenant": "MEMSUB_TENANT", "--org": "MEMSUB_ORG", "--user": "MEMSUB_USER",
                     "--session": "MEMSUB_SESSION"}


def test_every_context_option_reads_its_environment_variable_and_says_so():
    """A command that takes the context from the environment (as the MCP server and the tenant commands do) takes
    all of it from there, and its help names each variable."""
    checked = 0
    for name, command in _commands(cli):
        if name == "api-key create":  # the identity a new key carries is never taken from the environment
            continue
        for parameter in command.params:
            flag = next((opt for opt in parameter.opts if opt in CONTEXT_VARIABLES), None)
            if flag is None or not isinstance(parameter, click.Option):
                continue
            checked += 1
            assert parameter.envvar == CONTEXT_VARIABLES[flag], f"{name} {flag}"
            assert CONTEXT_VARIABLES[flag] in (parameter.help or ""), f"{name} {flag}: {parameter.help}"
    assert checked >= 4 * 5
