"""One registry per choice: the runner names an output format only in
``batchtok/runner/outputs/formats.py`` (:data:`FORMATS`) and a store (a URI scheme, its path
class, its module) only in ``batchtok/runner/io/`` (:data:`STORES`). Everywhere else it asks
the registry, so adding a format or a store is one module and one registry line.

The check reads the runner's source: a string constant equal to a format's name or a scheme
(``"megatron"``, ``"s3"``, ``"s3://"``), a name of a store's implementation (``S3Path``), or
an import of a format's or a store's module, outside those places, fails it; prose that
mentions them (help texts, messages) does not.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from batchtok.runner.io.arrow_fs import StorageOptions
from batchtok.runner.io.stores import STORES, as_path, options_of, scheme_of, store_of
from batchtok.runner.job import SETTINGS
from batchtok.runner.outputs.formats import DEFAULT_FORMAT, FORMATS

RUNNER = pathlib.Path(__file__).resolve().parents[2] / "batchtok" / "runner"
FORMATS_MODULE = RUNNER / "outputs" / "formats.py"
STORES_PACKAGE = RUNNER / "io"
SCHEMES = [scheme for scheme in STORES if scheme]
# what only a registry may name: the format modules of batchtok.formats, the stores' modules
# and the classes a store's locations are
FORMAT_MODULES = {f"batchtok.formats.{name}" for name in FORMATS}
STORE_MODULES = {f"batchtok.runner.io.{scheme}" for scheme in SCHEMES}
STORE_CLASSES = {"S3Path", "ObjectRunLock"}


def _module_of(path: pathlib.Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = list(path.relative_to(RUNNER.parents[1]).with_suffix("").parts[:-1])
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def naming(path: pathlib.Path) -> list[str]:
    """Each place in the module at ``path`` that names a format or a store, with its line."""
    in_formats = path == FORMATS_MODULE
    in_stores = STORES_PACKAGE in path.parents
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.relative_to(RUNNER)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if not in_formats and node.value in FORMATS:
                found.append(f"{where}: the format name {node.value!r}")
            if not in_stores and node.value.removesuffix("://") in SCHEMES:
                found.append(f"{where}: the scheme {node.value!r}")
        elif isinstance(node, (ast.Name, ast.Attribute)) and not in_stores:
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in STORE_CLASSES:
                found.append(f"{where}: the store class {name}")
        elif isinstance(node, ast.ImportFrom):
            module = _module_of(path, node)
            targets = {module} | {f"{module}.{alias.name}" for alias in node.names}
            if not in_formats and targets & FORMAT_MODULES:
                found.append(f"{where}: imports {sorted(targets & FORMAT_MODULES)}")
            if not in_stores and targets & STORE_MODULES:
                found.append(f"{where}: imports {sorted(targets & STORE_MODULES)}")
    return found


def test_the_runner_names_formats_and_stores_only_in_their_registries():
    found = [line for path in sorted(RUNNER.rglob("*.py")) for line in naming(path)]
    assert found == []


def test_the_check_sees_what_it_forbids(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch):
    """The check above is not vacuous: the ways of naming a format or a store it looks for
    are found in a module placed where the runner's code is."""
    module = RUNNER / "plan" / "_registry_probe.py"
    source = (
        "from ..io.s3 import S3Path\n"
        "from batchtok.formats import megatron\n"
        "def f(job, out):\n"
        "    if job.format == 'datatrove' or isinstance(out, S3Path):\n"
        "        return out.startswith('s3://')\n"
    )
    monkeypatch.setattr(pathlib.Path, "read_text", lambda self, **_: source)
    found = naming(module)
    assert any("the format name 'datatrove'" in f for f in found)
    assert any("the scheme 's3://'" in f for f in found)
    assert any("the store class S3Path" in f for f in found)
    assert any("batchtok.formats.megatron" in f for f in found)
    assert any("batchtok.runner.io.s3" in f for f in found)


def test_the_job_file_offers_exactly_the_registered_formats():
    setting = next(s for s in SETTINGS if s.key == "output.format")
    assert setting.default == DEFAULT_FORMAT
    for name in FORMATS:
        assert setting.check(name) == name
    with pytest.raises(ValueError):
        setting.check("arrow")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_places_its_files_with_the_primary_last(name: str):
    fmt = FORMATS[name]
    primary = fmt.primary("out", "sub/a.parquet")
    files = fmt.files(primary)
    assert files[-1] == primary
    assert len(set(files)) == len(files)
    assert all(f.startswith("out/sub/a") for f in files)
    if fmt.token_file:
        assert fmt.data_file(primary) in files
        # "": the job's output.dtype (MDS)
        assert fmt.token_dtype(50_000) in ("", "uint16", "int32", "uint32")
        assert any(f.endswith(fmt.sidecar_suffix) for f in files)
    else:
        assert fmt.token_dtype(50_000) == ""


def test_each_location_has_exactly_one_store():
    assert scheme_of("out/dir") == "" and store_of("out/dir").renames
    for scheme in SCHEMES:
        location = f"{scheme}://bucket/prefix"
        assert store_of(location) is STORES[scheme]
        path = store_of(location).path(location, StorageOptions(endpoint="http://127.0.0.1:1"))
        assert store_of(path) is STORES[scheme]
        assert as_path(str(path), path.options) == path  # a path keeps its options
        assert options_of(path / "sub") == StorageOptions(endpoint="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="hdfs://"):
        store_of("hdfs://host/dir")


def test_an_object_store_takes_no_location_as_a_bare_string():
    """An object's path carries the options its requests go with (the job's endpoint,
    region, anonymous access): a store never rebuilds one from a string, which would send
    its requests without them."""
    for scheme in SCHEMES:
        with pytest.raises(TypeError, match="must be given as its"):
            STORES[scheme].present(f"{scheme}://bucket/key")  # type: ignore[arg-type]
