"""The import rule of the package (docs/architecture.md), checked on the source.

Every ``import`` in ``freeprob/`` is read with :mod:`ast` (nothing is
imported), resolved to a freeprob module, and held against the rank table
below. A change that imports upward, across a forbidden boundary, creates a
cycle or imports a freeprob module inside a function fails here.
"""

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "freeprob"

#: Layer of each module: the first matching prefix wins.
LAYERS = [
    ("freeprob._errors", "base"),
    ("freeprob._deadline", "base"),
    ("freeprob._numbers", "base"),
    ("freeprob._precision", "base"),
    ("freeprob.expr", "expr"),
    ("freeprob.solve", "solve"),
    ("freeprob.scalar", "scalar"),
    ("freeprob.reduce", "reduce"),
    ("freeprob.montecarlo", "montecarlo"),
    ("freeprob.law", "law"),
    ("freeprob.units", "law"),
    ("freeprob.profiled", "law"),
    ("freeprob.discretized_law", "law"),
    ("freeprob.profile_law", "law"),
    ("freeprob.causal_law", "law"),
    ("freeprob.attention", "attention"),
    ("freeprob.cli", "cli"),
    ("freeprob", "face"),
]

#: Layer -> the layers (or exact modules) it may import. "base" (errors,
#: deadline, numbers, precision) is open to every layer.
ALLOWED = {
    "base": {"base"},
    "expr": {"base", "expr"},
    "solve": {"base", "solve"},
    "scalar": {"base", "scalar"},
    "reduce": {"base", "expr", "reduce"},
    "montecarlo": {"base", "expr", "freeprob.solve.cdf", "montecarlo"},
    "law": {"base", "expr", "reduce", "solve", "scalar", "law"},
    "attention": {"base", "expr", "montecarlo", "law", "attention"},
    "cli": {"base", "face", "freeprob.attention", "cli"},
    "face": {"base", "expr", "reduce", "solve", "scalar", "montecarlo", "law", "attention", "cli", "face"},
}

#: Order of the layers, lowest first (for the diagram in the docs).
RANKS = {"base": 0, "expr": 2, "solve": 2, "scalar": 2, "reduce": 3, "montecarlo": 3, "law": 4, "attention": 5,
         "cli": 6, "face": 6}


def module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(module):
    for prefix, name in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return name
    raise AssertionError(f"{module} has no layer: add it to LAYERS and to docs/architecture.md")


def _exists(module):
    rel = Path(*module.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


def imports(path):
    """``(target module, imported names, line, inside a function)`` for every freeprob import of ``path``."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target == "freeprob" or target.startswith("freeprob."):
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        if _exists(sub):
                            out.append((sub, (), child.lineno, inner))
                        else:
                            out.append((target, (alias.name,), child.lineno, inner))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "freeprob" or alias.name.startswith("freeprob."):
                        out.append((alias.name, (), child.lineno, inner))
            visit(child, inner)

    visit(tree, False)
    return out


SOURCES = sorted(p for p in ROOT.rglob("*.py"))


def test_every_module_has_a_layer():
    for path in SOURCES:
        layer(module_name(path))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_imports_follow_the_rule(path):
    me = module_name(path)
    mine = layer(me)
    bad = []
    for target, names, line, inner in imports(path):
        theirs = layer(target)
        if inner:
            bad.append(f"line {line}: imports {target} inside a function (import at module top)")
        if theirs not in ALLOWED[mine] and target not in ALLOWED[mine]:
            bad.append(f"line {line}: {mine} may not import {target} ({theirs})")
        private = [n for n in names if n.startswith("_")]
        # helpers private to a package are shared inside it, never across packages
        if private and target.rpartition(".")[0] != me.rpartition(".")[0]:
            bad.append(f"line {line}: imports the private name(s) {', '.join(private)} of {target}")
    assert not bad, f"{me}:\n  " + "\n  ".join(bad)


def test_no_import_cycles():
    graph = nx.DiGraph()
    for path in SOURCES:
        me = module_name(path)
        graph.add_node(me)
        for target, _, _, _ in imports(path):
            if target != me and not (path.name == "__init__.py" and target.startswith(me + ".")):
                graph.add_edge(me, target)
    # a package's face (its __init__) re-exports its own modules; those edges are not cycles of code
    for node in list(graph):
        if (ROOT.parent / Path(*node.split("."))).is_dir():
            graph.remove_edges_from([(node, t) for t in list(graph.successors(node)) if t.startswith(node + ".")])
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


def test_layers_only_rise():
    """The allowed table itself never lets a layer import a higher one."""
    for mine, allowed in ALLOWED.items():
        for other in allowed:
            if other in RANKS:
                assert RANKS[other] <= RANKS[mine], (mine, other)


def test_architecture_page_states_this_rule():
    """docs/architecture.md carries the same table, so the page cannot drift from the code."""
    page = (ROOT.parent / "docs" / "architecture.md").read_text()
    table = page.split("<!-- layers: begin -->")[1].split("<!-- layers: end -->")[0]
    rows = [r.strip().strip("|").split("|") for r in table.strip().splitlines()[2:]]
    stated = {}
    for name, _, allowed in rows:
        cells = {c.strip().strip("`") for c in allowed.split(",")}
        stated[name.strip()] = set(ALLOWED) if cells == {"every layer"} else cells
    assert stated == ALLOWED
