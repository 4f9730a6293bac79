"""Where `playbook contract` keeps locks and records: flags > [tool.playbook] > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrations_playbook import cli
from migrations_playbook.graphcode import contract, settings
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import V1


@pytest.mark.parametrize(
    ("table", "flags", "contracts", "records"),
    [
        pytest.param({}, {}, "app/playbook/contracts", "app/playbook/records", id="defaults-beside-the-langgraph-json"),
        pytest.param({}, {"contracts_flag": "ci/locks"}, "ci/locks", "ci/records", id="records-beside-an-explicit-contracts-dir"),
        pytest.param({}, {"contracts_flag": "ci/locks", "records_flag": "ci/notes"}, "ci/locks", "ci/notes", id="both-flags"),
        pytest.param(
            {"contracts_dir": "ops/locks", "records_dir": "ops/records"},
            {},
            "ops/locks",
            "ops/records",
            id="table-relative-to-its-pyproject",
        ),
        pytest.param({"contracts_dir": "ops/locks"}, {}, "ops/locks", "ops/records", id="table-contracts-only"),
        pytest.param(
            {"contracts_dir": "ops/locks", "records_dir": "ops/records"},
            {"contracts_flag": "ci/locks"},
            "ci/locks",
            "ops/records",
            id="flag-overrides-the-table-key-it-names",
        ),
        pytest.param(
            {"contracts_dir": "ops/locks", "records_dir": "ops/records"},
            {"records_flag": "ci/notes"},
            "ops/locks",
            "ci/notes",
            id="records-flag-overrides-the-table",
        ),
        pytest.param(
            {"contracts_dir": "ops/locks", "config": "app/langgraph.json"},
            {},
            "ops/locks",
            "ops/records",
            id="table-naming-this-config",
        ),
        pytest.param(
            {"contracts_dir": "ops/locks", "config": "other/langgraph.json"},
            {},
            "app/playbook/contracts",
            "app/playbook/records",
            id="table-for-another-config-is-not-used",
        ),
    ],
)
def test_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: dict, flags: dict, contracts: str, records: str
) -> None:
    monkeypatch.chdir(tmp_path)  # flags are relative to the working folder, like any CLI path
    config = tmp_path / "app" / "langgraph.json"
    pyproject = tmp_path / "pyproject.toml" if table else None

    paths = settings.resolve(config, pyproject=pyproject, table=table, **flags)

    assert (paths.contracts_dir, paths.records_dir) == (tmp_path / contracts, tmp_path / records)


def test_the_pyproject_used_is_reported_only_when_its_table_decided(tmp_path: Path) -> None:
    config, pyproject = tmp_path / "langgraph.json", tmp_path / "pyproject.toml"
    table = {"contracts_dir": "locks"}
    assert settings.resolve(config, pyproject=pyproject, table=table).pyproject == pyproject
    assert settings.resolve(config, pyproject=pyproject, table=table, contracts_flag="a", records_flag="b").pyproject is None


@pytest.mark.parametrize(
    ("layout", "found"),
    [
        pytest.param({"app/pyproject.toml": "", "pyproject.toml": ""}, "app/pyproject.toml", id="next-to-the-config-wins"),
        pytest.param({"pyproject.toml": ""}, "pyproject.toml", id="above-the-config"),
        pytest.param({"pyproject.toml": "", "repo/.git/HEAD": ""}, None, id="not-above-a-repository-root"),
    ],
)
def test_find_pyproject(tmp_path: Path, layout: dict[str, str], found: str | None) -> None:
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    app = tmp_path / "repo" / "app" if "repo/.git/HEAD" in layout else tmp_path / "app"
    app.mkdir(parents=True, exist_ok=True)

    result = settings.find_pyproject(app)

    assert result == (None if found is None else tmp_path / found)


def test_a_table_in_a_pyproject_above_the_config_applies(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.playbook]\ncontracts_dir = "ops/locks"\n')
    config = tmp_path / "services" / "agent" / "langgraph.json"
    config.parent.mkdir(parents=True)

    paths = settings.contract_paths(config)

    assert (paths.contracts_dir, paths.records_dir) == (tmp_path / "ops" / "locks", tmp_path / "ops" / "records")


BAD_TABLES = {
    "not-toml": ("[tool.playbook\n", "is not valid TOML"),
    "not-a-table": ('[tool]\nplaybook = "migrations"\n', "[tool.playbook] must be a table"),
    "unknown-key": (
        '[tool.playbook]\ncontract_dir = "x"\n',
        "unknown key(s) contract_dir; known: contracts_dir, records_dir, config",
    ),
    "not-a-string": ("[tool.playbook]\ncontracts_dir = 3\n", "contracts_dir must be a non-empty path string, got 3"),
    "empty-path": ('[tool.playbook]\nrecords_dir = ""\n', "records_dir must be a non-empty path string"),
}


@pytest.mark.parametrize(("text", "message"), list(BAD_TABLES.values()), ids=list(BAD_TABLES))
def test_a_bad_table_is_exit_2_naming_the_pyproject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    (tmp_path / "langgraph.json").write_text('{"graphs": {}}')

    code = cli.main(["contract", "--config", str(tmp_path / "langgraph.json"), "--check"])

    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert f"playbook: error: {tmp_path / 'pyproject.toml'}" in err and message in err


def test_with_both_flags_the_pyproject_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.playbook\n")

    paths = settings.contract_paths(tmp_path / "langgraph.json", contracts_flag=tmp_path / "l", records_flag=tmp_path / "r")

    assert (paths.contracts_dir, paths.records_dir) == (tmp_path / "l", tmp_path / "r")


def test_this_repo_keeps_its_folders_and_its_fixtures_do_not_inherit_them() -> None:
    """What `make test`'s `contract --check` relies on; and `contract --write` on a fixture
    project inside this repo must never write into this repo's own lock folder."""
    repo = settings.contract_paths(REPO_ROOT / "langgraph.json")
    assert (repo.contracts_dir, repo.records_dir) == (REPO_ROOT / contract.CONTRACTS_DIR, REPO_ROOT / contract.RECORDS_DIR)
    assert repo.pyproject == REPO_ROOT / "pyproject.toml"

    fixture = settings.contract_paths(V1 / "langgraph.json")
    assert (fixture.contracts_dir, fixture.records_dir) == (V1 / "playbook" / "contracts", V1 / "playbook" / "records")


def test_contract_write_with_a_contracts_dir_elsewhere_points_records_there_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locks = tmp_path / "elsewhere" / "locks"

    code = cli.main(["contract", "--config", str(V1 / "langgraph.json"), "--write", "--contracts-dir", str(locks)])

    out = capsys.readouterr().out
    assert code == cli.EXIT_PASS
    assert (locks / "helpdesk.json").is_file()
    assert f"locks written to {locks}; a record in {tmp_path / 'elsewhere' / 'records'} must list" in out
    assert not (V1 / "playbook").exists() and not (V1 / "migrations_playbook").exists()


def test_contract_write_uses_the_projects_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    config = project / "deploy" / "langgraph.json"
    config.parent.mkdir(parents=True)
    config.write_text((V1 / "langgraph.json").read_text())
    for name in ("helpdesk.py", "escalation.py"):
        (config.parent / name).write_text((V1 / name).read_text())
    (config.parent / "notes_pkg").mkdir()
    for name in ("__init__.py", "graph.py"):
        (config.parent / "notes_pkg" / name).write_text((V1 / "notes_pkg" / name).read_text())
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n\n[tool.playbook]\ncontracts_dir = "gate/locks"\n')

    written = cli.main(["contract", "--config", str(config), "--write"])
    checked = cli.main(["contract", "--config", str(config), "--check"])

    out = capsys.readouterr().out
    assert (written, checked) == (cli.EXIT_PASS, cli.EXIT_BLOCKED)
    assert sorted(p.name for p in (project / "gate" / "locks").glob("*.json")) == [
        "escalation.json",
        "helpdesk.json",
        "notes.json",
    ]
    assert sorted(p.name for p in (project / "gate" / "locks" / "history").iterdir()) == ["escalation", "helpdesk", "notes"]
    assert f"no migration record in {project / 'gate' / 'records'} covers helpdesk" in out
