"""The papers' tables (``configs/paper_tables.yaml``): rows, their training setting, how they are scored.

A :class:`Row` is one cell group of a paper's table: one model the paper trained (or quoted) and
the numbers it printed for it. The file's own header documents every field;
``tests/test_paper_tables.py`` checks every number against the papers' text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import yaml

from ..paths import CONFIG_DIR
from .recipes import benchmark_values

TABLES_FILE = CONFIG_DIR / "paper_tables.yaml"
SWEEPS_FILE = CONFIG_DIR / "paper_sweeps.yaml"  # the papers' sweep figures (no printed numbers), trained like tables
NUMBER_FIELDS = ("bleu", "bleu_delta", "params", "params_delta", "speed", "speed_delta")
#: Xu et al. (2019) Table 4: the ten probing tasks of Conneau et al. (2018), as the paper abbreviates them
PROBING_TASKS = ("SeLn", "WC", "TDep", "ToCo", "BShif", "Tense", "SubN", "ObjN", "SoMo", "CoIn")
#: published numbers of the other tasks (``published:`` keys): accuracy (%), perplexity, ROUGE F1, probing
#: accuracy per group (Xu et al. 2019 Table 3: surface / syntax / semantics) and per task (Table 4)
TASK_FIELDS = ("accuracy", "ppl", "rouge1", "rouge2", "rougeL", "rouge_avg", "surf", "sync", "semc") + PROBING_TASKS
#: the task kinds an ``evaluation`` entry can name, and the metrics each may report
TASK_METRICS = {
    "translation": ("tokenized_bleu", "sacrebleu"),
    "classification": ("accuracy",),
    "language_modeling": ("ppl",),
    "summarization": ("rouge",),
    "probing": ("probing_accuracy",),
}
#: metrics whose tables print several numbers per model (scores.json holds each under its published key)
MULTI_COLUMN_METRICS = ("rouge", "probing_accuracy")
#: the ``published:`` key that holds the paper's number in a metric (the report's "Paper" column)
PUBLISHED_FIELD = {"tokenized_bleu": "bleu", "sacrebleu": "bleu", "accuracy": "accuracy", "ppl": "ppl",
                   "rouge": "rouge1", "probing_accuracy": "surf"}


class TableError(ValueError):
    """A paper, table or row that the tables file does not have, or an inconsistent entry."""


def load_tables(path: Path = TABLES_FILE) -> Dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def with_sweeps(tables: Dict, sweeps: Optional[Dict]) -> Dict:
    """The tables plus each paper's sweep figures (``papers.P.figures.F`` of the sweeps file) as its table F,
    scored with the tables' ``evaluation`` settings."""
    if not sweeps:
        return tables
    merged = {**tables, "papers": {paper: {**spec, "tables": dict(spec["tables"])}
                                   for paper, spec in tables["papers"].items()}}
    for paper, spec in (sweeps.get("papers") or {}).items():
        if paper not in merged["papers"]:
            raise TableError(f"sweeps file: unknown paper {paper!r}; the tables file has {', '.join(merged['papers'])}")
        for figure, figure_spec in (spec.get("figures") or {}).items():
            if figure in merged["papers"][paper]["tables"]:
                raise TableError(f"sweeps file: {paper} figure {figure!r} has the name of a table")
            merged["papers"][paper]["tables"][figure] = figure_spec
    return merged


def is_figure(table: str) -> bool:
    return table.startswith("fig")


def table_title(paper: str, table: str) -> str:
    """``yang2019 Table 1`` or ``yang2019 Figure 2`` (sweep entries are named fig<N>)."""
    return f"{paper} Figure {table[len('fig'):]}" if is_figure(table) else f"{paper} Table {table}"


def table_dirname(table: str) -> str:
    """Where a table's runs go under WORK/PAPER: table<T>, or the figure's own name (fig2)."""
    return table if is_figure(table) else f"table{table}"


@dataclass(frozen=True)
class Evaluation:
    """How a setting's models are scored (``evaluation.<setting>`` of the tables file).

    ``task`` names the kind of model: translation (decoded with beam / lenpen and scored by
    ``scripts/evaluate.sh``), classification (accuracy), language_modeling (perplexity), probing
    (accuracy of probes on the frozen encoder of a translation model) or summarization (decoded with
    the data set's ``decode`` settings of :mod:`fairseq_localness.summarization.settings`, scored with
    files2rouge's ROUGE), scored by ``scripts/score_task.sh`` (:mod:`fairseq_localness.evaluation.task_scores`).
    """

    data: str
    checkpoint: str  # best | last<N> | last<N>-updates
    metric: str  # see TASK_METRICS
    task: str = "translation"
    beam: Optional[int] = None
    lenpen: Optional[float] = None
    lowercase: bool = False
    compound_split: bool = False
    # language modelling (fairseq-eval-lm): how the test text is cut into samples and how much context
    # each scored token sees; the papers do not say, each entry cites where its values come from
    tokens_per_sample: Optional[int] = None
    sample_break_mode: Optional[str] = None
    context_window: int = 0
    # summarization: which decoding settings of the data set (``data``): released (the authors' test scripts)
    # or paper (Sec. 3.1.2 read literally); fairseq_localness/summarization/settings.py holds both
    decode: Optional[str] = None
    # the training corpus the paper used, as data-prep records it in DATA_BIN/prep-info.json ("corpus"), where
    # data-prep also makes a reduced or filtered variant of the data set: reproduce trains on no other (unless
    # --allow-other-corpus); None: not checked
    corpus: Optional[str] = None

    def __post_init__(self) -> None:
        if self.task not in TASK_METRICS:
            raise TableError(f"evaluation task must be one of {', '.join(TASK_METRICS)}, got {self.task!r}")
        if self.metric not in TASK_METRICS[self.task]:
            choices = " or ".join(TASK_METRICS[self.task])
            raise TableError(f"evaluation metric of a {self.task} setting must be {choices}, got {self.metric!r}")
        if self.checkpoint != "best" and not self.average_last:
            raise TableError(f"evaluation checkpoint must be best, last<N> or last<N>-updates, got {self.checkpoint!r}")
        if self.task == "translation" and (self.beam is None or self.lenpen is None):
            raise TableError("a translation evaluation needs beam and lenpen")
        if self.task == "language_modeling" and (not self.tokens_per_sample or not self.sample_break_mode):
            raise TableError("a language_modeling evaluation needs tokens_per_sample and sample_break_mode")
        if self.task == "summarization":
            from ..summarization.settings import DATASETS, VARIANTS

            if self.data not in DATASETS or self.decode not in VARIANTS:
                raise TableError(f"a summarization evaluation needs data {' or '.join(DATASETS)} and decode "
                                 f"{' or '.join(VARIANTS)}, got {self.data!r} and {self.decode!r}")
        if self.task != "translation" and self.checkpoint != "best":
            raise TableError(f"a {self.task} evaluation scores checkpoint_best.pt (checkpoint: best), "
                             f"got {self.checkpoint!r}")

    @property
    def average_last(self) -> int:
        """N of last<N>[-updates], 0 for the best checkpoint."""
        digits = self.checkpoint[len("last"):].split("-")[0] if self.checkpoint.startswith("last") else ""
        return int(digits) if digits.isdigit() and int(digits) > 0 else 0

    @property
    def published_field(self) -> str:
        return PUBLISHED_FIELD[self.metric]

    def checkpoint_flags(self) -> List[str]:
        if self.average_last:
            return ["--avg-last", str(self.average_last)] + (["--avg-updates"] if "updates" in self.checkpoint else [])
        return ["--checkpoint", "checkpoint_best.pt"]

    def evaluate_flags(self, split: str) -> List[str]:
        """The options of ``scripts/evaluate.sh`` (translation) or ``scripts/score_task.sh`` (the other tasks)
        that score as the paper did."""
        if self.task == "translation":
            return ["--subset", split, "--beam", str(self.beam), "--lenpen", str(self.lenpen),
                    "--lowercase" if self.lowercase else "--no-lowercase",
                    "--compound-split" if self.compound_split else "--no-compound-split"] + self.checkpoint_flags()
        if self.task in ("classification", "probing"):
            return ["--task", self.task, "--subset", split] + self.checkpoint_flags()
        if self.task == "language_modeling":
            return ["--task", self.task, "--subset", split, "--tokens-per-sample", str(self.tokens_per_sample),
                    "--sample-break-mode", self.sample_break_mode, "--context-window", str(self.context_window)] \
                + self.checkpoint_flags()
        if self.task == "summarization":
            return ["--task", self.task, "--subset", split, "--dataset", self.data, "--variant", str(self.decode)] \
                + self.checkpoint_flags()
        raise TableError(f"reproduce does not score {self.task} yet")


@dataclass
class Row:
    paper: str
    table: str
    id: str
    label: str
    split: str
    setting: Optional[str]
    arch: Optional[str]
    desc: Optional[str] = None
    column: Optional[str] = None
    column_title: Optional[str] = None
    overrides: List[str] = field(default_factory=list)
    baseline: Optional[str] = None
    published: Dict[str, object] = field(default_factory=dict)
    quoted: Optional[str] = None
    pending: Optional[str] = None
    note: Optional[str] = None
    evaluation: Optional[str] = None  # the evaluation entry, where it is not the setting's own (probing)

    @property
    def scored_by(self) -> Optional[str]:
        """The ``evaluation`` entry that says how this row is scored: its own, else its training setting's."""
        return self.evaluation or self.setting

    @property
    def name(self) -> str:
        """The label with its column and description, for reports."""
        parts = [self.label] + [f"({x})" for x in (self.desc, self.column_title) if x]
        if self.quoted and self.quoted.split(" (")[0] not in self.label:
            parts.append(f"[{self.quoted}]")  # e.g. TRANSFORMER-BASE [Vaswani et al. (2017)]
        return " ".join(parts)

    @property
    def trained(self) -> bool:
        """Whether reproduce trains this row (quoted rows never; pending rows not yet)."""
        return bool(self.arch) and not self.quoted and not self.pending

    def flags(self) -> List[str]:
        """The row's overrides as fairseq flags (model.gaussian_window=layer -> --gaussian-window layer)."""
        return overrides_as_flags(self.overrides)


def overrides_as_flags(overrides: List[str]) -> List[str]:
    out: List[str] = []
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or not key.startswith("model."):
            raise TableError(f"row override {override!r} is not model.<option>=<value>")
        flag = "--" + key[len("model."):].replace("_", "-")
        value = value.strip("'\"")
        if value.lower() == "true":
            out.append(flag)
        elif value.lower() != "false":
            out += [flag, value]
    return out


def table_spec(tables: Dict, paper: str, table: str) -> Dict:
    papers = tables["papers"]
    if paper not in papers:
        raise TableError(f"unknown paper {paper!r}; choose from {', '.join(papers)}")
    if table not in papers[paper]["tables"]:
        raise TableError(f"{paper} has no table {table!r}; choose from {', '.join(papers[paper]['tables'])}")
    return papers[paper]["tables"][table]


def table_rows(tables: Dict, paper: str, table: str) -> List[Row]:
    spec = table_spec(tables, paper, table)
    columns = spec.get("columns") or {}
    rows = []
    for entry in spec["rows"]:
        column = columns.get(entry.get("column")) or {}
        setting = entry.get("setting") or column.get("setting") or spec.get("setting")
        rows.append(Row(
            paper=paper, table=table, id=entry["id"], label=entry["label"], split=spec["split"],
            setting=None if entry.get("quoted") else setting, arch=entry.get("arch"), desc=entry.get("desc"),
            column=entry.get("column"), column_title=column.get("title"), overrides=list(entry.get("overrides") or []),
            baseline=entry.get("baseline"), published=dict(entry.get("published") or {}), quoted=entry.get("quoted"),
            pending=entry.get("pending"), note=entry.get("note"),
            evaluation=entry.get("evaluation") or column.get("evaluation") or spec.get("evaluation")))
    return rows


def evaluation_of(tables: Dict, setting: str) -> Evaluation:
    if setting not in tables["evaluation"]:
        raise TableError(f"setting {setting!r} has no entry under `evaluation` in {TABLES_FILE}")
    return Evaluation(**tables["evaluation"][setting])


def setting_model_flags(setting: str) -> List[str]:
    """The model options a benchmark setting sets (configs/benchmark/<setting>.yaml ``model:``) as fairseq flags."""

    model = benchmark_values(setting).get("model") or {}
    return overrides_as_flags([f"model.{key}={value}" for key, value in model.items()])


def published_delta(row: Row, rows: Dict[str, Row], field: str = "bleu") -> Optional[float]:
    """The paper's difference to the row's baseline in ``field`` (BLEU, accuracy, ...): printed, else from
    the two printed scores."""
    if row.published.get(f"{field}_delta") is not None:
        return float(row.published[f"{field}_delta"])
    base = rows.get(row.baseline or "")
    if base is None or row.published.get(field) is None or base.published.get(field) is None:
        return None
    return round(float(row.published[field]) - float(base.published[field]), 2)


def published_speed_ratio(row: Row, rows: Dict[str, Row]) -> Optional[float]:
    """The paper's training speed relative to the row's baseline (1.0 for a baseline that prints a speed)."""
    base = rows.get(row.baseline or "")
    speed = row.published.get("speed")
    if base is None:
        return 1.0 if speed is not None else None
    base_speed = base.published.get("speed")
    if base_speed is None:
        return None
    if speed is None and row.published.get("speed_delta") is not None:
        speed = float(base_speed) + float(row.published["speed_delta"])
    return round(float(speed) / float(base_speed), 3) if speed is not None else None


def published_params(row: Row, rows: Dict[str, Row]) -> Optional[float]:
    """The paper's parameter count in millions: printed, else the baseline's plus the printed delta."""
    if row.published.get("params") is not None:
        return float(row.published["params"])
    base = rows.get(row.baseline or "")
    if base is None or base.published.get("params") is None or row.published.get("params_delta") is None:
        return None
    return round(float(base.published["params"]) + float(row.published["params_delta"]), 1)
