"""tfbert's subpackages import one way: no import cycle between them but the
models <-> checkpoints seam, and at most three function-level (deferred)
imports across subpackages outside `tfbert/tasks`. Read from the source
with `ast`, so it holds for imports that only run later."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tfbert"
ALLOWED_CYCLE = {"checkpoints", "models"}
MAX_DEFERRED_OUTSIDE_TASKS = 3


def _unit(parts):
    """The subpackage (or top-level module) a dotted tfbert name is in."""
    return parts[1].removesuffix(".py") if len(parts) > 1 else None


def _imports():
    """(importing unit, imported unit, deferred, where) for every import of
    another tfbert unit."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        source = _unit(relative.parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, deferred):
            for child in ast.iter_child_nodes(node):
                inner = deferred or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef))
                names = []
                if isinstance(child, ast.ImportFrom) and not child.level:
                    names = ([f"tfbert.{a.name}" for a in child.names]
                             if child.module == "tfbert" else [child.module])
                elif isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                for name in names:
                    parts = name.split(".")
                    target = _unit(parts) if parts[0] == "tfbert" else None
                    if target and target != source:
                        found.append((source, target, deferred,
                                      f"{relative}:{child.lineno}"))
                visit(child, inner)

        visit(tree, False)
    return found


def _cycles(edges):
    """Sets of units that import each other, directly or not."""
    units = {unit for edge in edges for unit in edge}
    reach = {unit: {target for source, target in edges if source == unit}
             for unit in units}
    changed = True
    while changed:
        changed = False
        for unit in units:
            more = set().union(*(reach[t] for t in reach[unit])) - reach[unit]
            if more:
                reach[unit] |= more
                changed = True
    return {frozenset({unit} | {other for other in reach[unit]
                                if unit in reach[other]})
            for unit in units if unit in reach[unit]}


def test_no_cycle_but_models_and_checkpoints():
    edges = {(source, target) for source, target, _, _ in _imports()}
    assert _cycles(edges) <= {frozenset(ALLOWED_CYCLE)}


def test_few_deferred_imports_outside_tasks():
    deferred = [where for source, _, is_deferred, where in _imports()
                if is_deferred and source != "tasks"]
    assert len(deferred) <= MAX_DEFERRED_OUTSIDE_TASKS, deferred


def test_the_check_sees_a_cycle():
    assert _cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == {
        frozenset("abc")}


def _modules_imported(path):
    """Top-level names of every module `path` imports, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_layers_import_no_tensorflow():
    """`tfbert.layers` is plain Keras (every backend); TensorFlow-only
    inference code lives in `tfbert.inference`."""
    importing = [str(path.relative_to(PACKAGE.parent))
                 for path in sorted((PACKAGE / "layers").rglob("*.py"))
                 if "tensorflow" in _modules_imported(path)]
    assert importing == []
    assert "tensorflow" in _modules_imported(
        PACKAGE / "inference" / "fused_dense.py")  # the check sees one
