"""How far the CPU's eager FlexAttention forward lies from the reference path, case by case: the margins behind
the tolerances of ``tests/test_flex.py`` (docs/gpu.md, "Tolerances").

    python tests/measure_flex_margins.py --run-json docs/results/testing/flex-cpu-margins.json

It runs exactly the comparisons of ``test_flex_forward_equals_reference`` (float32, absolute difference) and
``test_flex_half_precision_close_to_reference`` (bfloat16 and float16, difference relative to the output's
largest magnitude), on the real query rows, and writes the largest difference of each case with the test's
tolerance beside it. Not a test: pytest collects only ``test_*.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from fairseq_localness.provenance import command_line, machine_description, utc_now

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_flex  # noqa: E402  (the test module's cases and helpers, so the margins are the tests' own)


def largest_difference(methods, kind: str, dtype: torch.dtype) -> float:
    """max |Flex - reference| over the real rows; in half precision relative to the reference's largest magnitude."""
    block = test_flex.attention_block(methods, kind)
    expected, real = test_flex.run(block, kind, "sdpa", dtype)
    got, _ = test_flex.run(block, kind, "flex", dtype)
    difference = (got[real] - expected[real]).abs().max().item()
    return difference if dtype == torch.float32 else difference / expected[real].abs().max().item()


def measure() -> list:
    torch.manual_seed(0)
    records = []
    for param in test_flex.PARAMS:
        methods, kind = param.values
        records.append({"case": param.id, "dtype": "float32", "measure": "absolute",
                        "largest_difference": largest_difference(methods, kind, torch.float32),
                        "tolerance": test_flex.ATOL[torch.float32]})
    for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
        for param in test_flex.HALF_PRECISION_PARAMS:
            methods, kind = param.values
            records.append({"case": param.id, "dtype": name, "measure": "relative to the output's largest magnitude",
                            "largest_difference": largest_difference(methods, kind, dtype),
                            "tolerance": test_flex.ATOL[dtype]})
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-json", type=Path, required=True, help="where to write the result file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --run-json file")
    args = parser.parse_args(argv)
    if args.run_json.exists() and not args.overwrite:
        parser.error(f"--run-json {args.run_json} exists; give --overwrite to replace it")
    torch.set_num_threads(1)
    records = measure()
    run = {
        "date": utc_now().date().isoformat(),
        "machine": machine_description(),
        "torch": torch.__version__,
        "command": command_line("python tests/measure_flex_margins.py", sys.argv[1:] if argv is None else argv),
        "source": "written by the command: eager FlexAttention against the sdpa reference path, "
                  "the comparisons of tests/test_flex.py",
        "records": records,
    }
    args.run_json.parent.mkdir(parents=True, exist_ok=True)
    args.run_json.write_text(json.dumps(run, indent=1) + "\n")
    worst = {d: max(r["largest_difference"] / r["tolerance"] for r in records if r["dtype"] == d)
             for d in ("float32", "bfloat16", "float16")}
    print(f"{len(records)} cases; largest difference as a fraction of its tolerance: "
          + ", ".join(f"{d} {v:.3f}" for d, v in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
