"""No import cycles among the modules of ``qt_hard``, read from the source with ``ast``.

Every ``import`` / ``from ... import`` statement counts, the ones deferred into a function too (a
deferred import hides a cycle from the interpreter, not from a reader), except those under
``if TYPE_CHECKING:``. An edge goes to the module named (``from pkg import sub`` to ``pkg.sub`` when
that is a module, else to ``pkg``), not to the packages above it. The docs tool at the root
(``docgen/``, not installed) reads ``qt_hard``; no module of ``qt_hard`` imports it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "qt_hard"


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _import_nodes(body) -> list:
    out = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                out += _import_nodes(getattr(node, field, []) or [])
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``qt_hard`` modules it imports."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        targets = set()
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.split(".")[0] == "qt_hard"}
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "qt_hard":
                continue
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                targets.add(sub if sub in mods else resolve(name))
        graph[mod] = targets - {None, mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_reads_relative_and_deferred_imports():
    graph = import_graph()
    assert "qt_hard.evaluation.protocol" in graph["qt_hard.evaluation.senteval"]  # from .protocol import ...
    assert "qt_hard.encoders.st_folder" in graph["qt_hard.encoders.text"]
    assert "qt_hard.encoders.st_module" in graph["qt_hard.encoders.st_folder"]  # imported inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


# The layers of the package, lowest first. A module imports modules of its own layer and of lower ones,
# never of a higher one (a deferred import counts). A module belongs to the longest name it starts with,
# except the package root, which is ``qt_hard/__init__.py`` alone: it re-exports the encoders and sits
# with them.
LAYERS = [
    (
        "qt_hard.errors",
        "qt_hard.paths",
        "qt_hard.files",
        "qt_hard.sizes",
        "qt_hard.workers",
        "qt_hard.threads",
        "qt_hard.schedules",
        "qt_hard.diagnostics",
        "qt_hard.config_types",
        "qt_hard.seeds",
        "qt_hard.logs",
    ),
    ("qt_hard.negatives", "qt_hard.data"),  # the negatives core; corpora
    ("qt_hard.losses", "qt_hard.encoders", "qt_hard"),  # objectives assembled from the core; models
    ("qt_hard.pipelines", "qt_hard.training"),  # the loop and the pipeline interface it reads
    ("qt_hard.evaluation",),  # downstream evaluation of a saved model
    ("qt_hard.text", "qt_hard.vision", "qt_hard.graph", "qt_hard.integrations"),  # pipelines; the plugin
    ("qt_hard.experiments",),  # specs, grids, ledgers, report
    ("qt_hard.cli",),  # the commands
]
PIPELINES = ("qt_hard.text", "qt_hard.vision", "qt_hard.graph")


def layer_of(module: str, layers=LAYERS) -> tuple[int, str] | None:
    """(layer index, the name the module belongs to), or None for a module of no layer."""
    best = None
    for i, names in enumerate(layers):
        for name in names:
            inside = module == name or ("." in name and module.startswith(name + "."))  # a root: itself
            if inside and (best is None or len(name) > len(best[1])):
                best = (i, name)
    return best


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """The imports that run up the layers, as "a (layer) -> b (layer)"."""
    out = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module, layers)
        for target in sorted(targets):
            theirs = layer_of(target, layers)
            if mine and theirs and theirs[0] > mine[0]:
                out.append(f"{module} ({mine[1]}) -> {target} ({theirs[1]})")
    return out


def test_the_layer_check_reads_prefixes_and_flags_an_upward_import():
    layers = [("p.a", "p"), ("p.b",), ("p.c",)]
    assert layer_of("p", layers) == (0, "p") and layer_of("p.b.x", layers) == (1, "p.b")
    assert layer_of("p.z", layers) is None  # only the root itself belongs to "p"
    graph = {"p.b.x": {"p.a.y", "p.c"}, "p.a.y": {"p"}, "p.c": {"p.b.x"}}
    assert upward_imports(graph, layers) == ["p.b.x (p.b) -> p.c (p.c)"]


def test_every_module_has_a_layer_and_no_import_runs_up_the_layers():
    graph = import_graph()
    assert [m for m in sorted(graph) if layer_of(m) is None] == []
    assert upward_imports(graph) == []


def test_the_pipelines_never_import_each_other():
    graph = import_graph()
    crossing = [
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if (mine := layer_of(m)) and (theirs := layer_of(t))
        if mine[1] in PIPELINES and theirs[1] in PIPELINES and mine[1] != theirs[1]
    ]
    assert crossing == []


DOCS_TOOL = "docgen"  # the docs tool at the root of the checkout: above every layer, outside the package


def imports_of(path: Path, top: str) -> list[str]:
    """The modules named ``top`` or under it that the source at ``path`` imports, anywhere in it
    (deferred and ``TYPE_CHECKING`` imports included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == top]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == top:
            found.append(node.module)
    return sorted(found)


def test_the_docs_tool_check_reads_deferred_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import docgenx\nimport docgen\n\n\ndef f():\n    from docgen.pages import table\n")
    assert imports_of(source, DOCS_TOOL) == ["docgen", "docgen.pages"]


def test_no_module_of_the_package_imports_the_docs_tool():
    """``docgen/`` fills the pages from what ``qt_hard`` returns and is not installed with it: an
    import the other way would break the installed package."""
    assert (PACKAGE.parent / DOCS_TOOL / "__init__.py").is_file()  # the name checked is the tool's
    found = [f"{mod} -> {name}" for mod, (path, _) in _modules().items() for name in imports_of(path, DOCS_TOOL)]
    assert found == []
