"""Data preparation is the package ``localness_prep``, loaded under that one name: importing any of its modules
loads neither torch nor fairseq (nor ``fairseq_localness``, whose ``__init__`` imports both), so every
data-prep script and helper starts quickly; each ``data-prep/prepare-*.sh`` runs one of its modules."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PACKAGE = REPO / "localness_prep"
HEAVY = ("torch", "fairseq", "fairseq_cli", "fairseq_localness")


def modules():
    return sorted(".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                  for p in PACKAGE.rglob("*.py"))


def test_importing_every_module_loads_neither_torch_nor_fairseq():
    """In a fresh interpreter: every module imported, and every script's --help answered, without torch or fairseq."""
    code = f"""
import contextlib, importlib, io, json, sys
names = {modules()!r}
for name in names:
    importlib.import_module(name)
helps = {{}}
for name in names:
    if name.startswith("localness_prep.prepare.") and hasattr(sys.modules[name], "main"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = sys.modules[name].main(["--help"])
        helps[name] = (status, out.getvalue().splitlines()[0])
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
print(json.dumps({{"loaded": loaded, "helps": helps}}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == [], f"importing localness_prep loaded {result['loaded']}"
    doors = sorted((REPO / "data-prep").glob("prepare-*.sh"))
    assert len(result["helps"]) == len(doors) >= 18
    for name, (status, first_line) in result["helps"].items():
        assert status == 0 and re.match(r"Usage: bash prepare-[\w-]+\.sh ", first_line), (name, first_line)


def test_no_module_imports_torch_fairseq_or_the_plugin_even_inside_a_function():
    """The import statements themselves (an import inside a function would escape the test above)."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            wrong += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in HEAVY]
    assert not wrong, "localness_prep must not import torch, fairseq or fairseq_localness: " + ", ".join(wrong)


def test_every_data_prep_script_is_a_door_to_its_module():
    """Each data-prep/prepare-*.sh runs localness_prep.prepare.<module> with its arguments; the module exists and
    records the script's name (the name prep-info.json and the messages use)."""
    for door in sorted((REPO / "data-prep").glob("prepare-*.sh")):
        text = door.read_text()
        exec_line = r'^LOCALNESS_PREP_SCRIPT=\$0 exec "\$PYTHON" -m (localness_prep\.prepare\.\w+) "\$@"$'
        found = re.findall(exec_line, text, re.M)
        assert len(found) == 1, f"{door.name}: no exec line"
        module = REPO / (found[0].replace(".", "/") + ".py")
        assert module.is_file(), f"{door.name}: {module} is missing"
        assert f'"{door.name}"' in module.read_text(), f"{module} does not name {door.name}"
        assert len([line for line in text.splitlines() if line and not line.startswith("#")]) <= 5, door.name
    assert not (REPO / "data-prep" / "lib.sh").exists() and not (REPO / "fairseq_localness" / "prep").exists()
