"""One exception tree, drawn whole: every exception class of the project descends from the
exit-coded base it means, and the drawing in bundle_schema/errors.py shows it where it is."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

from bundle_schema import errors
from bundle_schema.errors import CheckFailed, EvidenceAuditError, InvalidInput

PACKAGES = ("bundle_schema", "pins", "verify", "audit")


def _project_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [
            m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")
        ]
        for name in names:
            if name.endswith(".__main__"):  # runs the CLI when imported
                continue
            module = importlib.import_module(name)
            for _, value in inspect.getmembers(module, inspect.isclass):
                if issubclass(value, BaseException) and value.__module__ == name:
                    found[value.__name__] = value
    return found


def _drawn() -> dict[str, str]:
    """Each class in the drawing, with the class drawn as its parent."""
    doc = errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*)(?:├── |└── )?(_?[A-Z]\w+)\b", line)
        if match is None or not re.search(r"(├── |└── |^    EvidenceAuditError)", line):
            continue
        depth = match.start(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match.group(2)] = stack[-1][1] if stack else ""
        stack.append((depth, match.group(2)))
    return parents


def test_every_exception_descends_from_an_exit_coded_base() -> None:
    classes = _project_exceptions()
    assert len(classes) >= 20
    outside = sorted(n for n, c in classes.items() if not issubclass(c, EvidenceAuditError))
    assert outside == []
    for name, cls in classes.items():
        if cls is not EvidenceAuditError:
            assert issubclass(cls, (InvalidInput, CheckFailed)), name
            assert cls.exit_code in (1, 2), name


def test_the_drawing_shows_every_class_under_its_own_parent() -> None:
    classes = _project_exceptions()
    drawn = _drawn()
    assert sorted(drawn) == sorted(classes)
    for name, parent in drawn.items():
        if parent:
            assert classes[name].__bases__[0] is classes[parent], (name, parent)
