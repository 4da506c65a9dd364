"""The reproduced table: our numbers beside the paper's, as markdown, CSV and JSON.

Per row: our score in the paper's metric with the paired-bootstrap mark against our baseline, the
paper's score with its mark, our difference to our baseline beside the paper's difference to its
baseline, parameters and training speed (relative to the baseline) beside the paper's.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Dict, List, Optional

from .tables import MULTI_COLUMN_METRICS, PROBING_TASKS, PUBLISHED_FIELD, TASK_FIELDS, Row, published_delta, published_params, published_speed_ratio

COLUMNS = [
    ("row", "Row"), ("arch", "Architecture"), ("ours", "Ours"), ("paper", "Paper"), ("ours_delta", "Δ ours"),
    ("paper_delta", "Δ paper"), ("params_ours", "Params M (ours)"), ("params_paper", "Params M (paper)"),
    ("speed_ours", "Speed vs base (ours)"), ("speed_paper", "Speed vs base (paper)"), ("status", "Status"),
]


def score_of(scores: Dict, metric: str, field: Optional[str] = None) -> Optional[float]:
    """Our score in the paper's metric; tokenized BLEU where sacreBLEU could not be computed. ``field``: the
    column of a metric with several (probing: SeLn, ..., surf, ...)."""
    entry = scores.get(metric) or scores.get("tokenized_bleu") or {}
    return entry.get(field, entry.get("score")) if field else entry.get("score")


def mark_of(scores: Dict, metric: str) -> str:
    """The paired-bootstrap arrow of our row against our baseline (evaluate.sh's significance)."""
    significance = scores.get("significance") or {}
    test = significance.get(metric) if metric in (scores or {}) else significance.get("tokenized_bleu")
    return (test or {}).get("mark", "")


def row_results(rows: List[Row], runs: Dict[str, Dict], status: Dict[str, str], metrics: Dict[str, str]) -> List[Dict]:
    """One record per row. ``runs``: row id -> {"scores": scores.json, "params": int, "train_wps": float};
    ``metrics``: row id -> the metric its paper reports (tokenized_bleu, sacrebleu, accuracy, ppl, ...). Rows of
    tables that print several numbers per model (ROUGE-1/2/L, probing tasks) also get ``paper_<field>`` for each."""
    by_id = {row.id: row for row in rows}
    records = []
    for row in rows:
        run = runs.get(row.id) or {}
        scores = run.get("scores") or {}
        metric = metrics.get(row.id, "tokenized_bleu")
        field = PUBLISHED_FIELD.get(metric, "bleu")
        if field not in row.published and field != "bleu":  # e.g. Xu 2019 Table 4 prints tasks, no group means
            field = next((f for f in TASK_FIELDS if f in row.published), field)
        column = field if metric in MULTI_COLUMN_METRICS else None
        ours = score_of(scores, metric, column)
        base_run = runs.get(row.baseline or "") or {}
        base_score = score_of(base_run.get("scores") or {}, metric, column)
        wps, base_wps = run.get("train_wps"), base_run.get("train_wps")
        params = run.get("params")
        records.append({
            "publication": row.paper, "table": row.table, "id": row.id, "row": row.name, "arch": row.arch,
            "setting": row.setting, "split": row.split, "metric": metric, "baseline": row.baseline,
            "ours": ours, "ours_mark": mark_of(scores, metric) if row.baseline else "",
            "paper": row.published.get(field), "paper_mark": row.published.get("mark", ""),
            "ours_delta": round(ours - base_score, 2) if ours is not None and base_score is not None else None,
            "paper_delta": published_delta(row, by_id, field),
            "params_ours": round(params / 1e6, 1) if params else None,
            "params_paper": published_params(row, by_id),
            "speed_ours": round(wps / base_wps, 3) if wps and base_wps else (1.0 if wps and not row.baseline else None),
            "speed_paper": published_speed_ratio(row, by_id),
            "train_wps": wps, "status": status.get(row.id, ""), "note": row.note,
        })
        extra = [f for f in TASK_FIELDS if f != field and row.published.get(f) is not None]
        records[-1].update({f"paper_{f}": row.published[f] for f in extra})
        if metric in MULTI_COLUMN_METRICS:  # our numbers in the table's other columns
            records[-1].update({f"ours_{f}": (scores.get(metric) or {}).get(f) for f in extra})
    return records


def _all_columns(record: Dict, prefix: str = "paper_") -> str:
    """Every number of the row beyond the main column (e.g. ``R-2 18.29, R-L 37.88``), the paper's or ours."""
    names = {"rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L", "rouge_avg": "R-avg", "surf": "Surf.",
             "sync": "Sync.", "semc": "Semc."}
    cells = [f"{names.get(k[len(prefix):], k[len(prefix):])} {v:.{1 if k[len(prefix):] in PROBING_TASKS else 2}f}"
             for k, v in record.items() if k.startswith(prefix) and k[len(prefix):] in TASK_FIELDS and v is not None]
    return ", ".join(cells) if cells else "-"


def _cell(record: Dict, key: str) -> str:
    value = record.get(key)
    if key in ("ours", "paper"):
        mark = record.get(f"{key}_mark") or ""
        return "n/a" if value is None else f"{value:.2f}{(' ' + mark) if mark else ''}"
    if key in ("ours_delta", "paper_delta"):
        return "n/a" if value is None else f"{value:+.2f}"
    if key.startswith("params"):
        return "n/a" if value is None else f"{value:.1f}"
    if key.startswith("speed"):
        return "n/a" if value is None else f"{value:.2f}"
    return "-" if value is None else str(value)


def markdown(title: str, citation: str, records: List[Dict], paper_marks: str = "") -> str:
    """The table with its legend. ``paper_marks``: what the paper's own arrows mean (the table's ``paper_marks``
    entry), which need not be our thresholds (Xu et al. 2019 Table 2's ⇑ is p < 0.05)."""
    columns = list(COLUMNS)
    if any(k.startswith("paper_") and k[len("paper_"):] in TASK_FIELDS for r in records for k in r):
        columns.insert(4, ("paper_all", "Paper (other columns)"))  # ROUGE-1/2/L, probing tasks
        columns.insert(3, ("ours_all", "Ours (other columns)"))
    lines = [f"## {title}", "", citation, "",
             "| " + " | ".join(header for _, header in columns) + " |",
             "|" + "---|" * len(columns)]
    for record in records:
        lines.append("| " + " | ".join(_all_columns(record, key[:-len("all")]) if key.endswith("_all")
                                       else _cell(record, key) for key, _ in columns) + " |")
    metrics = sorted({r["metric"] for r in records if r["arch"]})
    lines += ["", f"Ours / Paper: {', '.join(metrics)} on the {records[0]['split'] if records else ''} split as the "
              "paper scored it (docs/reproduce.md, \"Scoring\"). ↑ / ⇑ beside Ours: better than the row's baseline "
              "with p < 0.05 / 0.01 (paired bootstrap; ↓ / ⇓ worse)"
              + (f"; beside Paper, the paper's marks ({paper_marks})" if paper_marks else "")
              + "; Δ: difference to the row's baseline. Speed: training words per "
              "second relative to the baseline (ours) and the paper's steps per second relative to its baseline. "
              "n/a: not available."]
    if ("paper_all", "Paper (other columns)") in columns:
        lines[-1] += (" Tables with several numbers per model: Ours / Paper are the table's first column (R-1, Surf. or "
                      "SeLn), the other columns the rest as printed.")
    notes = [f"- {r['row']}: {r['note']}" for r in records if r.get("note")]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def to_csv(records: List[Dict]) -> str:
    out = io.StringIO()
    fields = list(records[0]) if records else []
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: "" if v is None else v for k, v in record.items()})
    return out.getvalue()


def to_json(title: str, citation: str, records: List[Dict]) -> str:
    return json.dumps({"table": title, "citation": citation, "rows": records}, indent=1, ensure_ascii=False) + "\n"


# --- docs/reproduce.md, "Tables": generated from the tables file, so that the page cannot drift from it ---

_DATA_SCRIPTS = {"wmt14_en_de": "WMT14 En-De (`data-prep/prepare-wmt14en2de.sh`)",
                 "wmt17_zh_en": "WMT17 Zh-En (`data-prep/prepare-wmt17zh2en.sh`)",
                 "wat17_ja_en": "WAT17 Ja-En (`data-prep/prepare-wat17ja2en.sh`)",
                 "iwslt14_de_en": "IWSLT14 De-En (`data-prep/prepare-iwslt14.sh`)",
                 "wmt14_en_fr": "WMT14 En-Fr (`data-prep/prepare-wmt14en2fr.sh`)",
                 "sst2": "SST-2 (`data-prep/prepare-sst2.sh`)", "imdb": "IMDB (`data-prep/prepare-imdb.sh`)",
                 "sva": "subject-verb agreement (`data-prep/prepare-sva.sh`)",
                 "lm1b": "One Billion Word (`data-prep/prepare-1bw.sh`)",
                 "cnndm": "CNN/Daily Mail (`data-prep/prepare-cnndm.sh`)",
                 "gigaword": "Gigaword (`data-prep/prepare-gigaword.sh`)",
                 "senteval_probing": "SentEval probing tasks (`data-prep/prepare-senteval-probing.sh`)"}
_METRICS = {"sacrebleu": "sacreBLEU (mteval-v13a tokenisation)", "tokenized_bleu": "tokenized BLEU"}
_HEADERS = {"bleu": "BLEU", "bleu_delta": "BLEU Δ", "params": "Params (M)", "params_delta": "Params Δ (M)",
            "speed": "Speed", "speed_delta": "Speed Δ", "accuracy": "Accuracy (%)", "ppl": "Perplexity",
            "rouge1": "R-1", "rouge2": "R-2", "rougeL": "R-L", "rouge_avg": "R-avg", "surf": "Surf.",
            "sync": "Sync.", "semc": "Semc.", **{task: task for task in PROBING_TASKS}}


def _data_name(evaluation) -> str:
    """The data set, its data-prep script and, where the setting names one, the corpus the paper trained on."""
    name = _DATA_SCRIPTS.get(evaluation.data, evaluation.data)
    if not getattr(evaluation, "corpus", None):
        return name
    return f"{name[:-1]}, corpus `{evaluation.corpus}`)" if name.endswith(")") else f"{name} (corpus `{evaluation.corpus}`)"


def _scoring(evaluation) -> str:
    """How a setting's rows are scored, in words (docs/reproduce.md)."""
    if evaluation.task == "translation":
        return (f"{_METRICS[evaluation.metric]}, {'case-insensitive' if evaluation.lowercase else 'cased'}"
                f"{', compound-split' if evaluation.compound_split else ''}, beam {evaluation.beam}, "
                f"lenpen {evaluation.lenpen}, " + ("best checkpoint" if evaluation.checkpoint == "best" else
                                                   f"average of the last {evaluation.average_last} checkpoints"))
    if evaluation.task == "classification":
        return "exact accuracy of the best checkpoint by validation accuracy (`scripts/score_task.sh`)"
    if evaluation.task == "language_modeling":
        return (f"fairseq-eval-lm perplexity of the best checkpoint by validation loss, sample break mode "
                f"{evaluation.sample_break_mode}, {evaluation.tokens_per_sample} tokens per sample, context window "
                f"{evaluation.context_window} (`scripts/score_task.sh`)")
    if evaluation.task == "probing":
        return ("test accuracy of SentEval's probing classifier on the frozen encoder of the best checkpoint, per task "
                "and per group (`scripts/score_task.sh`, `scripts/probe.py`)")
    if evaluation.task == "summarization":
        from ..summarization.settings import decode_setting

        decode = decode_setting(evaluation.data, evaluation.decode)
        return (f"ROUGE-1/2/L F1 and their mean (files2rouge: ROUGE-1.5.5.pl, else its pure-Python equal) of the "
                f"best checkpoint by validation loss, {evaluation.data} decoded with the {evaluation.decode} settings (beam "
                f"{decode.beam}, lenpen {decode.lenpen}, min length {decode.min_len}, max length {decode.max_len_b}, "
                f"trigram blocking; `scripts/score_task.sh`)")
    raise ValueError(f"no description of how {evaluation.task} is scored")


def docs_tables(tables_data: Dict) -> str:
    """One section per table: what it trains, on which data, how it is scored, the expected GPU-hours and
    the paper's numbers. ``python -m fairseq_localness.experiments.report`` prints it."""
    from .costs import gpu_hours
    from .tables import evaluation_of, table_rows

    out: List[str] = []
    for paper, spec in tables_data["papers"].items():
        for table, table_spec in spec["tables"].items():
            rows = table_rows(tables_data, paper, table)
            trained = [r for r in rows if r.trained]
            # every row the paper trained (pending ones too: how the paper scored them is part of the table)
            scored = trained or [r for r in rows if r.arch and not r.quoted]
            settings = sorted({r.setting for r in scored if r.setting})
            evaluations = [evaluation_of(tables_data, s) for s in sorted({r.scored_by for r in scored})]
            # probing: the translation data its encoders are trained on, too
            trained_on = [evaluation_of(tables_data, r.setting) for r in scored if r.setting and r.scored_by != r.setting]
            data = sorted({_data_name(e) for e in evaluations + trained_on})
            scoring = sorted({_scoring(e) for e in evaluations})
            hours = sum(gpu_hours(r)[3] or 0 for r in trained)
            quoted = sum(1 for r in rows if r.quoted)
            marks = f" The paper's marks: {table_spec['paper_marks']}." if table_spec.get("paper_marks") else ""
            out += [f"### {paper} Table {table}", "", f"{table_spec['caption']}. Source: {table_spec['source']}.{marks}", "",
                    f"- **Trains** {len(trained)} of its {len(rows)} rows"
                    + (f" ({quoted} quoted from other papers: listed with their numbers, never trained)" if quoted else "")
                    + f"; settings {', '.join(f'`{s}`' for s in settings)}.",
                    f"- **Data**: {', '.join(data)}; scored on the **{table_spec['split']}** split"
                    + (" (newsdev2017)" if table_spec["split"] == "valid" else "") + ".",
                    f"- **Scoring**: {'; '.join(scoring)}.",
                    f"- **Expected cost**: about {hours:,.0f} P40 GPU-hours for the trained rows "
                    f"(`reproduce.sh {paper} {table} --gpu-hours` itemises it).", ""]
            columns = [c for c in _HEADERS if any(r.published.get(c) is not None for r in rows)]
            out += ["| Row | " + " | ".join(_HEADERS[c] for c in columns) + " | How we train it |",
                    "|---|" + "---|" * len(columns) + "---|"]
            for row in rows:
                how = f"quoted ({row.quoted})" if row.quoted else f"`{row.arch}`" + "".join(f" `{o}`" for o in row.overrides)
                if row.pending:
                    how += f"; not yet trainable: {row.pending}"
                cells = []
                for column in columns:
                    value = row.published.get(column)
                    digits = 1 if column.startswith("params") or column in PROBING_TASKS else 2  # as printed
                    text = "" if value is None else (f"{value:+.{digits}f}" if column.endswith("delta") else f"{value:.{digits}f}")
                    if column == "bleu" and row.published.get("mark"):
                        text += " " + str(row.published["mark"])
                    cells.append(text)
                out.append(f"| {row.name.replace('|', '/')} | " + " | ".join(cells) + f" | {how} |")
            out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    from .tables import load_tables

    print(docs_tables(load_tables()), end="")
