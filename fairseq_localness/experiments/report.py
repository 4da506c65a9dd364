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

from .tables import Row, published_delta, published_params, published_speed_ratio

COLUMNS = [
    ("row", "Row"), ("arch", "Architecture"), ("ours", "Ours"), ("paper", "Paper"), ("ours_delta", "Δ ours"),
    ("paper_delta", "Δ paper"), ("params_ours", "Params M (ours)"), ("params_paper", "Params M (paper)"),
    ("speed_ours", "Speed vs base (ours)"), ("speed_paper", "Speed vs base (paper)"), ("status", "Status"),
]


def score_of(scores: Dict, metric: str) -> Optional[float]:
    """Our score in the paper's metric; tokenized BLEU where sacreBLEU could not be computed."""
    entry = scores.get(metric) or scores.get("tokenized_bleu") or {}
    return entry.get("score")


def mark_of(scores: Dict, metric: str) -> str:
    """The paired-bootstrap arrow of our row against our baseline (evaluate.sh's significance)."""
    significance = scores.get("significance") or {}
    test = significance.get(metric) if metric in (scores or {}) else significance.get("tokenized_bleu")
    return (test or {}).get("mark", "")


def row_results(rows: List[Row], runs: Dict[str, Dict], status: Dict[str, str], metrics: Dict[str, str]) -> List[Dict]:
    """One record per row. ``runs``: row id -> {"scores": scores.json, "params": int, "train_wps": float};
    ``metrics``: row id -> the metric its paper reports."""
    by_id = {row.id: row for row in rows}
    records = []
    for row in rows:
        run = runs.get(row.id) or {}
        scores = run.get("scores") or {}
        metric = metrics.get(row.id, "tokenized_bleu")
        ours = score_of(scores, metric)
        base_run = runs.get(row.baseline or "") or {}
        base_score = score_of(base_run.get("scores") or {}, metric)
        wps, base_wps = run.get("train_wps"), base_run.get("train_wps")
        params = run.get("params")
        records.append({
            "paper": row.paper, "table": row.table, "id": row.id, "row": row.name, "arch": row.arch,
            "setting": row.setting, "split": row.split, "metric": metric, "baseline": row.baseline,
            "ours": ours, "ours_mark": mark_of(scores, metric) if row.baseline else "",
            "paper": row.published.get("bleu"), "paper_mark": row.published.get("mark", ""),
            "ours_delta": round(ours - base_score, 2) if ours is not None and base_score is not None else None,
            "paper_delta": published_delta(row, by_id),
            "params_ours": round(params / 1e6, 1) if params else None,
            "params_paper": published_params(row, by_id),
            "speed_ours": round(wps / base_wps, 3) if wps and base_wps else (1.0 if wps and not row.baseline else None),
            "speed_paper": published_speed_ratio(row, by_id),
            "train_wps": wps, "status": status.get(row.id, ""), "note": row.note,
        })
    return records


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


def markdown(title: str, citation: str, records: List[Dict]) -> str:
    lines = [f"## {title}", "", citation, "",
             "| " + " | ".join(header for _, header in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for record in records:
        lines.append("| " + " | ".join(_cell(record, key) for key, _ in COLUMNS) + " |")
    metrics = sorted({r["metric"] for r in records if r["arch"]})
    lines += ["", f"Ours / Paper: {', '.join(metrics)} on the {records[0]['split'] if records else ''} split as the "
              "paper scored it (docs/reproduce.md, \"Scoring\"). ↑ / ⇑: better than the row's baseline with p < 0.05 / "
              "0.01 (paired bootstrap; ↓ / ⇓ worse); Δ: difference to the row's baseline. Speed: training words per "
              "second relative to the baseline (ours) and the paper's steps per second relative to its baseline. "
              "n/a: not available."]
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
                 "wmt14_en_fr": "WMT14 En-Fr (`data-prep/prepare-wmt14en2fr.sh`)"}
_METRICS = {"sacrebleu": "sacreBLEU (mteval-v13a tokenisation)", "tokenized_bleu": "tokenized BLEU"}
_HEADERS = {"bleu": "BLEU", "bleu_delta": "BLEU Δ", "params": "Params (M)", "params_delta": "Params Δ (M)",
            "speed": "Speed", "speed_delta": "Speed Δ"}


def docs_tables(tables_data: Dict) -> str:
    """One section per table: what it trains, on which data, how it is scored, the expected GPU-hours and
    the paper's numbers. ``python -m fairseq_localness.experiments.report`` prints it."""
    from .cluster_tables import gpu_hours
    from .tables import evaluation_of, table_rows

    out: List[str] = []
    for paper, spec in tables_data["papers"].items():
        for table, table_spec in spec["tables"].items():
            rows = table_rows(tables_data, paper, table)
            trained = [r for r in rows if r.trained]
            settings = sorted({r.setting for r in trained})
            evaluations = [evaluation_of(tables_data, s) for s in settings]
            data = sorted({_DATA_SCRIPTS.get(e.data, e.data) for e in evaluations})
            scoring = sorted({f"{_METRICS[e.metric]}, {'case-insensitive' if e.lowercase else 'cased'}"
                              f"{', compound-split' if e.compound_split else ''}, beam {e.beam}, lenpen {e.lenpen}, "
                              + ("best checkpoint" if e.checkpoint == "best" else
                                 f"average of the last {e.average_last} checkpoints") for e in evaluations})
            hours = sum(gpu_hours(r)[3] or 0 for r in trained)
            quoted = sum(1 for r in rows if r.quoted)
            out += [f"### {paper} Table {table}", "", f"{table_spec['caption']}. Source: {table_spec['source']}.", "",
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
                    digits = 1 if column.startswith("params") else 2
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
