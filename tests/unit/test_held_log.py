"""The project's own log lines are held back from the playbook's output (migrations_playbook/render/held_log.py)."""

from __future__ import annotations

import io
import logging
import warnings

from migrations_playbook.render.held_log import holding


def test_a_projects_logging_and_warnings_go_to_a_file_and_one_line_says_so() -> None:
    before = list(logging.getLogger().handlers)
    out = io.StringIO()
    with holding(out) as held:
        logging.basicConfig(level=logging.INFO)  # what a project's module does at import: a no-op now
        logging.getLogger("httpx").warning("HTTP Request: GET http://x/threads")
        warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)
    assert held.count == 2 and held.path is not None
    lines = held.path.read_text().splitlines()
    assert "HTTP Request" in lines[0] and "a library's deprecation" in lines[1]
    assert out.getvalue() == (
        f"playbook: note: 2 log line(s) and warning(s) from the project's code were held back from this output: {held.path}\n"
    )
    assert logging.getLogger().handlers == before


def test_nothing_held_says_nothing() -> None:
    out = io.StringIO()
    with holding(out) as held:
        pass
    assert (held.count, held.path, out.getvalue()) == (0, None, "")


def test_a_command_importing_a_noisy_project_prints_one_line_about_it(tmp_path, capsys) -> None:
    """End to end through the CLI: `contract --write` imports the project's graph modules, which configure
    logging and log at import (as many projects' modules do)."""
    import shutil

    from migrations_playbook.cli import main
    from tests.fixtures.gate_projects.variants import V1

    project = tmp_path / "noisy"
    shutil.copytree(V1, project)
    module = project / "helpdesk.py"
    noise = (
        "import logging as _logging\nimport warnings as _warnings\n\n"
        "_logging.basicConfig(level=_logging.INFO)\n"
        '_logging.getLogger("noisy").warning("connecting to the vector store at import")\n'
        '_warnings.warn("a library deprecation at import", UserWarning, stacklevel=1)\n'
    )
    module.write_text(module.read_text().replace("import operator\n", "import operator\n" + noise, 1))
    code = main(["contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(tmp_path / "l")])
    err = capsys.readouterr().err
    assert code == 0
    assert "connecting to the vector store" not in err and "deprecation at import" not in err
    assert "2 log line(s) and warning(s) from the project's code were held back from this output" in err
