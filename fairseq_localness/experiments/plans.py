"""What a paper table trains: a plan per row (run directory, data, train and evaluate commands), the order rows
train in, the corpus checks and each row's status. Built by ``reproduce.sh`` (:mod:`.reproduce`), submitted by
:mod:`.cluster_tables`, and reused by the comparison (:mod:`.compare`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..evaluation.outputs import SCORES
from ..paths import SCRIPTS_DIR
from .fairseq_options import parser_error, setting_task_flags
from .launch import Launch, has_binarized_data
from .recipes import arch_configs, benchmarks
from .tables import Row, TableError, evaluation_of, setting_model_flags, table_dirname

SCRIPTS = SCRIPTS_DIR


def missing_reason(row: Row, tables: Optional[Dict] = None) -> Optional[str]:
    """Why a row is not trained in this checkout, or None when fairseq accepts it as configured."""
    if row.quoted:
        return f"published only: the paper quotes {row.quoted}"
    if row.pending:
        return f"not yet trainable: {row.pending}"
    if not row.arch:
        return "no architecture given"
    if row.setting not in benchmarks():
        return f"no setting config configs/benchmark/{row.setting}.yaml"
    if tables is not None:
        try:
            evaluation_of(tables, row.scored_by)  # every valid evaluation task is scored (score_task.sh)
        except TableError as err:
            return str(err)
    if row.arch not in arch_configs():
        return f"no architecture config configs/arch/{row.arch}.yaml"
    try:
        flags = setting_model_flags(row.setting) + row.flags()
    except TableError as err:
        return str(err)
    return parser_error(row.arch, flags, setting_task_flags(row.setting))


@dataclass
class RowPlan:
    """One row's run: its training (a :class:`.launch.Launch`), its evaluation command and where both write."""

    row: Row
    run_dir: Path
    data_bin: Path
    launch: Launch
    evaluate: List[str]
    metric: str

    @property
    def train(self) -> List[str]:
        """The training as the ``scripts/train.sh`` command that a dry run prints and a local run starts."""
        return ["bash", str(SCRIPTS / "train.sh"), *self.launch.train_sh_args()]

    @property
    def eval_dir(self) -> Path:
        return self.run_dir / f"eval-{self.row.split}"

    @property
    def scores(self) -> Path:
        return self.eval_dir / SCORES


def plan_row(row: Row, tables: Dict, work: Path, data_root: Path, gpus: int = 0, cpu_procs: int = 1,
             max_tokens: Optional[int] = None) -> RowPlan:
    """A row's plan on GPUS GPUs (0: CPU_PROCS CPU processes), MAX_TOKENS per device (default: the setting's)."""
    evaluation = evaluation_of(tables, row.scored_by)
    training = evaluation_of(tables, row.setting) if row.scored_by != row.setting else evaluation
    run_dir = work / row.paper / table_dirname(row.table) / row.id
    data_bin = data_root / training.data / "data-bin"  # probing: the translation data its encoder is trained on
    launch = Launch(benchmark=row.setting, arch=row.arch, data=str(data_bin), save_dir=str(run_dir / "checkpoints"),
                    gpus=gpus, cpu_procs=1 if gpus else cpu_procs, max_tokens=max_tokens,
                    overrides=list(row.overrides))
    script = "evaluate.sh" if evaluation.task == "translation" else "score_task.sh"
    evaluate = ["bash", str(SCRIPTS / script), str(run_dir / "checkpoints"), str(data_bin),
                *evaluation.evaluate_flags(row.split), "--out", str(run_dir / f"eval-{row.split}")]
    if script == "evaluate.sh":  # the row's own directory, evaluated only while it has no scores.json: what an
        evaluate.append("--force")  # interrupted evaluation left there (unmarked, from older versions) is replaced
    if evaluation.task == "probing":  # the probing files, and the BPE / casing of the encoder's training data
        evaluate += ["--probing-tasks", str(data_root / evaluation.data), "--prep-dir", str(data_root / training.data)]
    if row.baseline and evaluation.task == "translation":  # the paired bootstrap test reads the baseline's output
        evaluate += ["--baseline-hyp", str(run_dir.parent / row.baseline / f"eval-{row.split}")]
    return RowPlan(row, run_dir, data_bin, launch, evaluate, evaluation.metric)


def row_metrics(rows: List[Row], tables: Dict) -> Dict[str, str]:
    """The metric each row is reported in: its setting's, and for rows without one (quoted from other papers)
    the metric of the table's other rows."""
    metrics: Dict[str, str] = {}
    for row in rows:
        try:
            metrics[row.id] = evaluation_of(tables, row.scored_by).metric if row.scored_by else ""
        except (TableError, TypeError):
            metrics[row.id] = ""
    shared = next((m for m in metrics.values() if m), "tokenized_bleu")
    return {row_id: metric or shared for row_id, metric in metrics.items()}


@dataclass
class CorpusCheck:
    """A data set a table trains on, the corpus its paper used and the one data-prep recorded in the data-bin."""

    data: str
    data_bin: Path
    expected: str  # the evaluation entry's ``corpus``
    found: Optional[str]  # prep-info.json's "corpus"; "" where it records none; None: no binarized data yet

    @property
    def other(self) -> bool:
        return self.found is not None and self.found != self.expected

    @property
    def found_name(self) -> str:
        return self.found or "an unrecorded corpus"

    def line(self) -> str:
        if self.found is None:
            where = f"{self.data_bin} is not prepared yet"
        elif self.other:
            where = f"{self.data_bin} holds {self.found_name}"
        else:
            where = f"{self.data_bin} holds it"
        return f"CORPUS {self.data}: the paper's training data is {self.expected}; {where}"


def recorded_corpus(data_bin: Path) -> str:
    """The training corpus data-prep recorded in DATA_BIN/prep-info.json, "" where it records none."""
    import json

    try:
        with open(data_bin / "prep-info.json", encoding="utf-8") as handle:
            return str(json.load(handle).get("corpus") or "")
    except (OSError, ValueError):
        return ""


def corpus_checks(plans: Sequence[RowPlan], tables: Dict) -> List[CorpusCheck]:
    """One check per data set the rows train on whose setting names the paper's corpus (``corpus`` of its
    evaluation entry: data sets that data-prep also makes in a reduced or filtered variant)."""
    checks: Dict[Path, CorpusCheck] = {}
    for plan in plans:
        training = evaluation_of(tables, plan.row.setting)
        if not training.corpus or plan.data_bin in checks:
            continue
        found = recorded_corpus(plan.data_bin) if has_binarized_data(plan.data_bin) else None
        checks[plan.data_bin] = CorpusCheck(training.data, plan.data_bin, training.corpus, found)
    return list(checks.values())


def read_scores(path: Path) -> Dict:
    import json

    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def baseline_first(plans: List[RowPlan]) -> List[RowPlan]:
    """Rows in an order where every row's baseline is trained and scored before it."""
    ids = {plan.row.id: plan for plan in plans}

    def depth(plan: RowPlan, seen: int = 0) -> int:
        base = ids.get(plan.row.baseline or "")
        return 0 if base is None or seen > len(ids) else 1 + depth(base, seen + 1)

    return sorted(plans, key=depth)


def status_of(plan: Optional[RowPlan], reason: Optional[str], failed: Dict[str, str], row: Row) -> str:
    if reason:
        return reason
    assert plan is not None
    if plan.scores.exists():
        return "done"
    if row.id in failed:
        return f"failed: {failed[row.id]}"
    if (plan.run_dir / "checkpoints" / "checkpoint_last.pt").exists():
        return "training/evaluation incomplete"
    return "not run"
