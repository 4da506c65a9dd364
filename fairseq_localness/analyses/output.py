"""What every analysis writes: NAME.png (the figure), NAME.csv (the numbers behind it), NAME.md (a table).

Existing files are never overwritten unless asked (``--overwrite``): a figure
regenerated from another checkpoint must not silently replace one a user kept.
"""

from __future__ import annotations

import csv
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's root logger would print its font search

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only; no display is needed or wanted
import matplotlib.pyplot as plt  # noqa: E402

from ..provenance import directory_problem  # noqa: E402
from .loading import AnalysisError  # noqa: E402

#: a compact, paper-like style: serif text, thin lines, light grid, no top/right spines
PAPER_STYLE = {
    "font.family": "serif",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "savefig.dpi": 150,
}

#: the paper figures' two-system colours (Yang 2018 Fig. 3: blue layer-specific, red query-specific)
SYSTEM_COLOURS = ["tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:gray"]


def figure(rows: int = 1, cols: int = 1, width: float = 3.4, height: float = 2.6, **kwargs):
    """A matplotlib figure in the paper style (``width`` x ``height`` inches per panel)."""
    plt.rcParams.update(PAPER_STYLE)  # this process only draws the analyses' figures; legends and labels added later need it too
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained", **kwargs)
    return fig, axes


@dataclass
class Table:
    """Rows of one analysis, the columns in order, and a caption citing the paper's figure or table."""

    columns: List[str]
    rows: List[Dict[str, object]] = field(default_factory=list)
    caption: str = ""

    def add(self, **row: object) -> None:
        unknown = set(row) - set(self.columns)
        if unknown:
            raise ValueError(f"unknown column(s) {sorted(unknown)}; columns are {self.columns}")
        self.rows.append(row)

    def column(self, name: str) -> List[object]:
        return [row.get(name) for row in self.rows]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def markdown(table: Table, limit: Optional[int] = 200, provenance: str = "") -> str:
    """The table as markdown: the caption, then ``provenance`` (when, where and by which command it was measured),
    then the rows."""
    lines = []
    caption = " ".join(part for part in (table.caption, provenance) if part)
    if caption:
        lines += [caption, ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    rows = table.rows if limit is None else table.rows[:limit]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in table.columns) + " |")
    if limit is not None and len(table.rows) > limit:
        lines.append(f"\n({len(table.rows) - limit} more rows in the CSV)")
    return "\n".join(lines) + "\n"


@dataclass
class Outputs:
    """The output directory of one command, with the overwrite policy."""

    directory: str
    overwrite: bool = False
    provenance: str = ""  #: added to every markdown table's caption: the date, machine and command that measured it
    written: List[str] = field(default_factory=list)
    tables: Dict[str, Table] = field(default_factory=dict)  # NAME -> the table written to NAME.csv

    def paths(self, name: str) -> Dict[str, str]:
        return {ext: os.path.join(self.directory, f"{name}.{ext}") for ext in ("png", "csv", "md")}

    @staticmethod
    def extra_table_name(name: str, key: str) -> str:
        """The file of ``write``'s extra table ``key``, relative to the directory."""
        return f"{name}-{key}.csv"

    def check(self, name: str, extra: Sequence[str] = ()) -> None:
        """Fail before any work if an output exists and --overwrite was not given, or --out is not a directory."""
        problem = directory_problem(self.directory, "--out")
        if problem:
            raise AnalysisError(f"{problem}: choose another --out")
        targets = list(self.paths(name).values()) + [os.path.join(self.directory, e) for e in extra]
        existing = [p for p in targets if os.path.exists(p)]
        if existing and not self.overwrite:
            raise AnalysisError(f"{existing[0]} exists; pass --overwrite to replace it, or choose another --out")

    def write(self, name: str, table: Table, fig=None, extra_tables: Optional[Dict[str, Table]] = None) -> Dict[str, str]:
        """Write NAME.csv, NAME.md (and NAME.png from ``fig``); ``extra_tables`` go to NAME-KEY.csv."""
        os.makedirs(self.directory, exist_ok=True)
        paths = self.paths(name)
        self.check(name, [self.extra_table_name(name, key) for key in extra_tables or {}])  # before writing any
        write_csv(paths["csv"], table)
        with open(paths["md"], "w", encoding="utf-8") as f:
            f.write(markdown(table, provenance=self.provenance))
        if fig is not None:
            fig.savefig(paths["png"], bbox_inches="tight")
            plt.close(fig)
        else:
            paths.pop("png")
        for key, extra in (extra_tables or {}).items():
            path = os.path.join(self.directory, self.extra_table_name(name, key))
            write_csv(path, extra)
            paths[f"csv:{key}"] = path
        self.written.extend(paths.values())
        self.tables[name] = table
        return paths


def write_csv(path: str, table: Table) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=table.columns)
        writer.writeheader()
        for row in table.rows:
            writer.writerow({c: row.get(c) for c in table.columns})
