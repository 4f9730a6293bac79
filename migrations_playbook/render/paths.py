"""Paths in reports: relative to the project, never the absolute paths of the machine that made them.

A report is pasted into records and pull requests, so a path the command was given or made (the
candidate, ``--live-contract``, a SQLite store, a staging copy) is shown relative to the project (the
working folder the command ran in), or by its name alone when it lies outside it. `shown` does it for a
`Path`; `scrub` for text that already holds one (a note a source wrote, the ``live`` label of a
``sqlite:///...`` store), and `scrub_json` for every string of a report's JSON.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_ABSOLUTE = re.compile(r"(?:(?<=://)|(?<![\w/:.~-]))/[^\s`'\"|,;()<>\[\]{}]+")
"""An absolute path in text: a ``/`` not inside a word, a relative path or a URL's route (``http://host/route``),
or the path of a ``sqlite:///ABS`` or ``file:///ABS`` URI; up to whitespace, quotes, Markdown or a bracket."""


def shown(path: Path | str, root: Path | None = None) -> str:
    """``path`` relative to ``root`` (default: the working folder), or its name when it lies outside it."""
    base = (root or Path.cwd()).resolve()
    target = Path(path)
    if not target.is_absolute():
        return str(path)
    try:
        relative = target.resolve().relative_to(base)
    except ValueError:
        try:
            relative = target.relative_to(base)
        except ValueError:
            return target.name or str(path)
    return str(relative) if str(relative) != "." else "."


def _is_machine_path(text: str) -> bool:
    """A path whose first folder exists on this machine (``/tmp/...``, ``/home/...``), not an API route such as
    ``/playbook/contract``."""
    first = text.lstrip("/").split("/", 1)[0]
    return bool(first) and Path("/", first).is_dir()


def scrub(text: str, root: Path | None = None) -> str:
    """``text`` with every absolute path of this machine shown as `shown` shows it."""
    base = (root or Path.cwd()).resolve()

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        trail = ""
        while found and found[-1] in ".:":  # the end of a sentence, not of the path
            found, trail = found[:-1], found[-1] + trail
        if not _is_machine_path(found):
            return match.group(0)
        return shown(found, base) + trail

    return _ABSOLUTE.sub(replace, text)


def scrub_json(value: Any, root: Path | None = None) -> Any:
    """Every string of a JSON value (keys too) through `scrub`."""
    base = (root or Path.cwd()).resolve()
    if isinstance(value, str):
        return scrub(value, base)
    if isinstance(value, dict):
        return {scrub(k, base) if isinstance(k, str) else k: scrub_json(v, base) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_json(v, base) for v in value]
    return value
