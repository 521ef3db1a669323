"""The engine's modules import on their own, in no cycle, and share no private names.

The graph holds every ``import`` / ``from ... import`` in ``batchtok/`` (inside functions
too, except under ``if TYPE_CHECKING:``), relative imports resolved. ``from pkg import name``
counts as an import of ``pkg.name`` when that is a module, else of ``pkg`` itself.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "batchtok"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST):
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for each import in module ``name``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            if submodule in MODULES:
                out.append((submodule, []))
            else:
                out.append((target, [alias.name]))
    return out


GRAPH = {
    name: sorted({target for target, _ in imports_of(name) if target in MODULES})
    for name in MODULES
}


def test_no_import_cycle():
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(name: str) -> None:
        path.append(name)
        on_path.add(name)
        for target in GRAPH[name]:
            if target in on_path:
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in done:
                visit(target)
        on_path.discard(name)
        path.pop()
        done.add(name)

    for name in MODULES:
        if name not in done:
            visit(name)


def test_no_private_name_crosses_modules():
    crossing = [
        f"{name} imports {imported} from {target}"
        for name in MODULES
        for target, names in imports_of(name)
        if target.split(".")[0] == "batchtok" and target != name
        for imported in names
        if imported.startswith("_") and not imported.startswith("__")
    ]
    assert crossing == []


# One fresh interpreter; before each module, every batchtok module loaded so far is dropped.
_IMPORT_EACH = """
import importlib, sys, traceback
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "batchtok" or m.startswith("batchtok.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        print(name, traceback.format_exc().strip().splitlines()[-1])
"""


def test_every_module_imports_on_its_own():
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *MODULES], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == []


# The oracle, `tokenizers`, is the audit's only: imported inside a function of this one module,
# so no other command (and no import of batchtok) loads it.
ORACLE_IMPORTERS = {"batchtok.runner.audit"}


def _module_level_imports(tree: ast.Module):
    """The import statements run when the module is imported (not inside a def or class)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _names_oracle(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "tokenizers" for alias in node.names)
    return node.level == 0 and (node.module or "").split(".")[0] == "tokenizers"


def test_tokenizers_is_imported_only_inside_the_audit():
    importers = {
        name
        for name in MODULES
        if any(t == "tokenizers" or t.startswith("tokenizers.") for t, _ in imports_of(name))
    }
    assert importers <= ORACLE_IMPORTERS
    for name in ORACLE_IMPORTERS:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        eager = [node.lineno for node in _module_level_imports(tree) if _names_oracle(node)]
        assert eager == [], f"{name} imports tokenizers at module level (line {eager})"


def _printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_batchtok_and_its_cli_does_not_load_tokenizers():
    code = "import sys, batchtok, batchtok.cli, batchtok.runner.audit; "
    assert _printed(code + "print('tokenizers' in sys.modules)") == "False"


def test_the_command_line_imports_neither_pyarrow_nor_the_engine_before_a_command_needs_them():
    """`batchtok status` and a job file's validation need neither; `batchtok run` imports
    them once the job is read (a third of a small run's start-up)."""
    code = (
        "import sys, batchtok.cli, batchtok.runner.cli; "
        "from batchtok.runner import load_job; "
        "print(sorted(m for m in ('pyarrow', 'numpy', 'regex', 'batchtok.tokenizer') "
        "if m in sys.modules))"
    )
    assert _printed(code) == "[]"


def test_the_command_lines_all_pieces_is_explains():
    import batchtok.cli
    import batchtok.explain

    assert batchtok.cli.ALL_PIECES == batchtok.explain.ALL_PIECES


# The engine's users (the runner, the command line) reach it through its public interface:
# no private attribute (``tok._truncation``) of any object but their own.
ENGINE_USERS = [
    path
    for name, path in MODULES.items()
    if name.startswith("batchtok.runner") or name == "batchtok.cli"
]
STDLIB_PRIVATE = {"_exit"}  # os._exit: a forked worker's way out


def _private_reads(path: pathlib.Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in STDLIB_PRIVATE:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_engines_users_read_no_private_attribute():
    assert [line for path in ENGINE_USERS for line in _private_reads(path)] == []
