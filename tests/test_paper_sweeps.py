"""configs/paper_sweeps.yaml: the sweep figures (Yang 2019 Fig. 2, Xu 2019 Fig. 2) train through reproduce."""

from __future__ import annotations

import pytest

from fairseq_localness.experiments import reproduce, tables
from fairseq_localness.modelbuild import parse_model_args

TABLES = tables.with_sweeps(tables.load_tables(), tables.load_tables(tables.SWEEPS_FILE))
# the swept option of each figure: row id -> (parsed option, value); Yang 2019 Sec. 5.1, Xu 2019 Sec. 5.2
SWEPT = {
    ("yang2019", "fig2"): {**{f"m{m}": ("csan1d_window", m) for m in (1, 3, 5, 7, 9, 11, 13, 15)},
                           **{f"n{n}": ("csan2d_heads", n) for n in (1, 3, 5, 7)}},
    ("xu2019", "fig2"): {f"m{m}": ("hybrid_window", m) for m in (1, 2, 3, 4, 5)},
}


@pytest.mark.parametrize("paper,figure", sorted(SWEPT))
def test_sweep_rows_build_through_fairseqs_options_with_the_swept_value(paper, figure):
    rows = tables.table_rows(TABLES, paper, figure)
    assert all(not row.published and row.trained for row in rows)  # a figure prints no number
    for row in rows:
        assert reproduce.missing_reason(row, TABLES) is None, row.id  # fairseq's parser + locality validation
        args = parse_model_args(row.arch, tables.setting_model_flags(row.setting) + row.flags(), label=row.id)
        if row.id in SWEPT[paper, figure]:
            option, value = SWEPT[paper, figure][row.id]
            assert getattr(args, option) == value, row.id
            assert "encoder" in getattr(args, option.split("_")[0] + "_attention"), row.id
    assert {r.id for r in rows} - set(SWEPT[paper, figure]) <= {"m-all"}  # the vanilla-SAN end of panel (a)
    if paper == "yang2019":  # panel (b) keeps the window at the paper's 11 (Fig. 2 caption)
        heads = [r for r in rows if r.column == "heads"]
        assert heads and all("model.csan2d_window=11" in r.overrides for r in heads)


def test_dry_run_lists_every_sweep_command_and_writes_nothing(capsys, tmp_path):
    assert reproduce.main(["xu2019", "fig2", "--dry-run", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("xu2019 Figure 2: ") and "5 rows, 5 trained" in out
    for m in range(1, 6):
        block = out[out.index(f"ROW m{m} ("):].split("\nROW ")[0]
        assert "train.sh xu2019_wmt14_en_de_base transformer_hybrid_local_wmt_en_de" in block
        assert f"xu2019/fig2/m{m}/checkpoints" in block and f"model.hybrid_window={m}" in block
        assert "--subset valid --beam 4 --lenpen 0.6" in block  # the En-De development set, Sec. 5.2
    assert not list(tmp_path.iterdir())


def test_a_sweep_may_not_shadow_a_table():
    sweeps = {"papers": {"xu2019": {"figures": {"1": {"rows": []}}}}}
    with pytest.raises(tables.TableError, match="has the name of a table"):
        tables.with_sweeps(tables.load_tables(), sweeps)
    with pytest.raises(tables.TableError, match="unknown paper"):
        tables.with_sweeps(tables.load_tables(), {"papers": {"nobody2020": {"figures": {}}}})
    assert tables.table_dirname("fig2") == "fig2" and tables.table_dirname("3") == "table3"
