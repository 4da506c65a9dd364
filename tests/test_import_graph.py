"""Imports run one way: no cycle among the modules of the plugin and of the data-prep package (imports inside
functions count), nothing in ``attention/``, ``methods/`` or ``layers/`` imports ``architectures/`` or
``experiments/``, and ``localness_prep`` imports nothing of ``fairseq_localness``."""

import ast
from pathlib import Path
from typing import Dict, List, Set

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "fairseq_localness"
#: the packages whose modules make the graph: the plugin and the data-prep package (loaded under this one name)
PACKAGES = (PACKAGE, REPO / "localness_prep")
LOW = ("fairseq_localness.attention", "fairseq_localness.methods", "fairseq_localness.layers")
HIGH = ("fairseq_localness.architectures", "fairseq_localness.experiments")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: Set[str]) -> Set[str]:
    """Every package module ``path`` imports, at the top or inside a function, relative imports resolved; an
    import of a package's name (``from . import report``) counts as an import of that module."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            targets = [root] + [f"{root}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # fairseq_localness.x.y.func -> fairseq_localness.x.y
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target != name:
                found.add(target)
    return found


def graph() -> Dict[str, Set[str]]:
    paths = sorted(p for package in PACKAGES for p in package.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) - {"fairseq_localness"} for p in paths}


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle_and_a_relative_import(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    edges = graph()
    # layers/man.py: `from .localness import ...` inside the package, resolved to its module
    assert "fairseq_localness.layers.localness" in edges["fairseq_localness.layers.man"]
    # the data-prep package is in the graph, and the plugin's imports of it are arrows of the graph
    assert {"localness_prep.script", "localness_prep.tokenize"} <= edges["localness_prep.prepare.iwslt14"]
    assert "localness_prep.senteval" in edges["fairseq_localness.probing.cli"]


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles (counting imports inside functions): " + "; ".join(" <-> ".join(c) for c in found)


def test_low_layers_do_not_import_high_ones():
    wrong = [f"{module} -> {target}" for module, targets in graph().items() if module.startswith(LOW)
             for target in targets if target.startswith(HIGH)]
    assert not wrong, "attention/, methods/ and layers/ must not import architectures/ or experiments/: " + ", ".join(wrong)


def test_data_prep_does_not_import_the_plugin():
    """``localness_prep`` runs without torch and fairseq; ``fairseq_localness/__init__.py`` imports both."""
    paths = sorted((REPO / "localness_prep").rglob("*.py"))
    modules = {module_name(p) for package in PACKAGES for p in package.rglob("*.py")}
    wrong = [f"{module_name(path)} -> {target}" for path in paths for target in imports_of(path, modules)
             if not target.startswith("localness_prep")]  # the package fairseq_localness itself included
    assert not wrong, "localness_prep must not import fairseq_localness: " + ", ".join(wrong)


def test_design_docs_name_every_import_of_the_tooling():
    """docs/design.md's layout gives, for each module of ``experiments/`` above the bottom row, the modules of
    ``experiments/`` it imports (``module  what it is  -> a, b, ...``, a long list continued on the next line):
    exactly those the source imports."""
    import re

    block = (REPO / "docs" / "design.md").read_text(encoding="utf-8").split("experiments/   the tooling", 1)[1]
    block = block.split("\narchitectures/", 1)[0]
    documented: Dict[str, Set[str]] = {}
    current, listing = None, False  # the module of the line; whether its list of arrows may go on
    for line in block.splitlines()[1:]:
        head = re.match(r"  (\w+) ", line)
        if head:
            current, listing = head.group(1), False
        if "->" in line:
            arrows, listing = line.split("->", 1)[1], True
        elif listing and line.startswith(" " * 20):
            arrows = line
        else:
            listing = False
            continue
        documented.setdefault(current, set()).update(a.strip() for a in arrows.split("(")[0].split(",") if a.strip())
    package = "fairseq_localness.experiments."
    actual = {name[len(package):]: {target[len(package):] for target in targets if target.startswith(package)}
              for name, targets in graph().items() if name.startswith(package)}
    assert documented, "no arrows read from docs/design.md"
    for module, arrows in documented.items():
        assert arrows == actual[module], f"docs/design.md: {module} -> {sorted(arrows)}; it imports {sorted(actual[module])}"
