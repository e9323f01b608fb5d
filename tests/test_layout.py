"""The package's rooms and the direction of its imports, read from the code (CONTRIBUTING: Layout).

Every module is in one room. The core (configuration, canonical arguments, counting, the
detectors, the reminders' words) imports nothing from LangChain; the translation between a
conversation and the core sits on it; reporting on those; the room named "faces" (the guard
step, the wiring warnings, and the handler, node and middleware users wire in) on all of these;
0.2.0's module paths, which find each old name where it lives now, on those; the tooling on
top, imported by nothing below it. No module imports one that imports it back,
even for types only.

Every module below the tooling is private to users (its name starts with an underscore): a user
imports the package's `__all__` and the tooling's documented entry points, and a public module
defines no other name without an underscore. A name that starts with an underscore stays in its
room: the tooling and `evaluation/` take the public names of the modules they reach, and
`evaluation/` reaches the tooling through its public modules.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import repeat_reminder_langchain

PACKAGE = Path(repeat_reminder_langchain.__file__).parent
LANGCHAIN = ("langchain", "langchain_core", "langgraph")

ROOMS = {
    "core": {
        "_arguments",
        "_checks",
        "_settings_file",
        "_files",
        "_counter",
        "_record",
        "_install",
        "_normalise",
        "_canonical",
        "_config",
        "_detectors",
        "_detectors._detector",
        "_detectors.cycle",
        "_detectors.recurring_error",
        "_detectors.repeat",
        "_detectors.same_error",
        "_detectors.same_output",
        "_detectors.stale",
        "_escalation",
        "_exits",
        "_policy",
        "_reminder",
        "_log",
    },
    "translation": {"_conversation", "_messages", "replay"},
    "reporting": {"_events", "_metrics", "_stats"},
    "faces": {"_guard", "_wiring", "_callbacks", "_graph", "_middleware", "_prebuilt"},
    # 0.2.0's module paths, each a name table's lookup (`_moved`), until 0.6.0.
    "moved": {
        "_moved",
        "callbacks",
        "canonical",
        "config",
        "conversation",
        "escalation",
        "events",
        "graph",
        "messages",
        "middleware",
        "policy",
        "prebuilt",
        "reminder",
        "stats",
        "steps",
        "streaks",
        "tooling.cli",
        "tooling.logs",
        "tooling.progress",
        "tooling.report",
    },
    "tooling": {
        "__main__",
        "tooling",
        "tooling.audit",
        "tooling._checkpointer",
        "tooling._cli",
        "tooling.demo",
        "tooling._findings",
        "tooling.lab",
        "tooling._logs",
        "tooling._progress",
        "tooling._report",
        "tooling._suggest",
        "tooling._tables",
        "tooling.transcript",
        "tooling.viz",
    },
}
ORDER = list(ROOMS)  # each room may import from the rooms before it, and from itself
ROOM = {module: room for room, modules in ROOMS.items() for module in modules}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module's imports at module level, type-only ones included (`.x` for the package's)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _name(path)
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        here = [part for part in here if part]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [*tree.body]
        body += [node for block in tree.body if isinstance(block, ast.If) for node in block.body]
        imported: set[str] = set()
        for node in body:
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module or "")
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                for alias in node.names:
                    module = ".".join([*base, alias.name])
                    imported.add("." + (module if module in ROOM else ".".join(base)))
        found[name] = imported
    return found


IMPORTS = _imports()


def test_every_module_is_in_one_room() -> None:
    assert set(IMPORTS) - {""} == set(ROOM)


def test_the_core_imports_nothing_from_langchain() -> None:
    leaks = {
        (module, imported)
        for module, imports in IMPORTS.items()
        if ROOM.get(module) == "core"
        for imported in imports
        if imported.split(".")[0] in LANGCHAIN
    }
    assert leaks == set()


def test_each_room_imports_only_from_itself_and_the_rooms_below() -> None:
    upward = {
        (module, imported[1:])
        for module, imports in IMPORTS.items()
        if module in ROOM
        for imported in imports
        if imported.startswith(".")
        and imported[1:] in ROOM
        and ORDER.index(ROOM[imported[1:]]) > ORDER.index(ROOM[module])
    }
    assert upward == set()


def test_no_module_imports_one_that_imports_it_back() -> None:
    # The package's `__init__` is left out: it re-exports every room, by design.
    edges = {
        module: {imported[1:] for imported in imports if imported[1:] in ROOM}
        for module, imports in IMPORTS.items()
        if module in ROOM
    }
    circles = set()
    for start, below in edges.items():
        seen, stack = set(), list(below)
        while stack:
            module = stack.pop()
            if module == start:
                circles.add(start)
                break
            if module not in seen:
                seen.add(module)
                stack.extend(edges[module])
    assert circles == set()


def _names_imported(path: Path, depth: int) -> set[str]:
    """Every name a file imports from the package: absolute (depth 0), or at least `depth`
    levels up (`from ..x import y`: 2), as `module.name`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if (depth == 0 and module.startswith(PACKAGE.name)) or (depth and node.level >= depth):
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _private(imported: str) -> bool:
    name = imported.rsplit(".", 1)[-1]
    return name.startswith("_") and not name.endswith("__")  # `__version__` is public


def test_the_tooling_imports_no_private_name_from_the_rooms_below() -> None:
    # Every module below is private to users, not to the tooling: it takes their public names.
    reached = {
        (path.name, imported)
        for path in sorted((PACKAGE / "tooling").glob("*.py"))
        for imported in _names_imported(path, 2)
        if _private(imported)
    }
    assert reached == set()


def test_the_evaluation_reaches_the_tooling_through_its_public_modules() -> None:
    evaluation = PACKAGE.parent / "evaluation"
    reached = {
        (path.name, imported.rpartition(".")[0])
        for path in sorted(evaluation.glob("*.py"))
        for imported in _names_imported(path, 0)
        if any(part.startswith("_") for part in imported.split(".")[1:-1])
    }
    assert reached == set()


def test_the_evaluation_imports_no_private_name_of_the_package() -> None:
    evaluation = PACKAGE.parent / "evaluation"
    reached = {
        (path.name, imported)
        for path in sorted(evaluation.glob("*.py"))
        for imported in _names_imported(path, 0)
        if _private(imported)
    }
    assert reached == set()


def _defined(path: Path) -> set[str]:
    """The names a file defines at module level (functions, classes, assignments)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
    return found


def test_a_public_module_defines_no_public_name_beyond_its_all() -> None:
    # A name a user may import is one the module exports; the rest start with an underscore.
    extra = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _name(path)
        if name in ("", "tooling") or any(part.startswith("_") for part in name.split(".")):
            continue
        module = importlib.import_module(f"{PACKAGE.name}.{name}")
        public = {found for found in _defined(path) if not found.startswith("_")}
        if public - set(module.__all__):
            extra[name] = sorted(public - set(module.__all__))
    assert extra == {}


def _named(side: ast.expr) -> str:
    """What a compared value is called: `x.behavior`, `behavior`, `tag["behavior"]`,
    `tag.get("behavior")`."""
    if isinstance(side, ast.Attribute):
        return side.attr
    if isinstance(side, ast.Name):
        return side.id
    if isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Constant):
        return str(side.slice.value)
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.args:
        first = side.args[0]
        if side.func.attr == "get" and isinstance(first, ast.Constant):
            return str(first.value)
    return ""


def test_one_module_decides_what_each_exit_behavior_does() -> None:
    # Every other module asks the exit's object (`EXITS[name]`, `escalation.exit`, the
    # guard's `stops`), never compares the name, however it is read: a behaviour added or
    # changed is changed in `_exits` alone.
    compared = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if _name(path) == "_exits":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # (Asking whether a name is an exit's, `in EXITS`, decides nothing.)
            if isinstance(node, ast.Compare) and _named(node.comparators[-1]) != "EXITS":
                names = [_named(side) for side in (node.left, *node.comparators)]
                if any(name.endswith("behavior") for name in names):
                    compared.append(f"{_name(path)}:{node.lineno}")
    assert compared == []
