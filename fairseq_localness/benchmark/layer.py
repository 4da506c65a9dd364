"""One encoder self-attention layer on its own: forward + backward CPU time, and the activation memory it keeps.

Where the whole-model benchmark (:mod:`.cli`) hides an attention layer's cost among embeddings, feed-forward
blocks and the output projection, this one isolates it: the first encoder layer's self-attention of a model built
as ``fairseq-train`` builds it (:func:`fairseq_localness.modelbuild.parse_model_args`, the ``translation`` task),
at the sizes of ``transformer`` (C = 512, 8 heads) unless ``--model`` overrides them. Per variant and length:

* **time**: forward + backward of the layer alone (projections included; the loss is the sum of its output), in
  CPU milliseconds of its process (``time.process_time``, one thread), the minimum over ``--steps`` steps after
  one untimed step. Each (variant, length) runs in a fresh process, so that no case inherits another's allocator
  caches;
* **memory**: the bytes of the distinct tensors autograd keeps for backward in one training-mode call (a
  ``saved_tensors_hooks`` pack hook, counting each storage once), without the parameters and the layer input,
  in MiB. This is deterministic: it does not depend on the machine's load.

The batch holds ``--tokens`` tokens (``tokens // length`` sentences of ``length`` tokens), as a training batch
of a fixed token budget does. :data:`CSAN_VARIANTS` are the columns of docs/methods/yang2019-csan.md's layer
tables: full attention with and without attention dropout (which decides whether the probabilities are
materialised), and the convolutional SANs forced to each of their two implementations.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

from ..provenance import command_line, load_average, result_file_problem, run_header, utc_now, write_result_file
from .specs import BenchmarkError, parse_seq_lens


@dataclass(frozen=True)
class Variant:
    """One column: an architecture's first encoder self-attention with fairseq option overrides."""

    name: str  # the key of the result records
    label: str  # the table's column header
    arch: str
    overrides: Dict[str, str] = field(default_factory=dict)


CSAN_VARIANTS = (
    Variant("sdpa", "full, fused SDPA (attention dropout 0)", "transformer", {"attention_dropout": "0.0"}),
    Variant("materialised", "full, materialised (attention dropout 0.1)", "transformer", {"attention_dropout": "0.1"}),
    Variant("1d_dense", "1D dense (band mask, SDPA)", "transformer_csan1d", {"csan1d_implementation": "dense"}),
    Variant("1d_banded", "1D banded", "transformer_csan1d", {"csan1d_implementation": "banded"}),
    Variant("2d_dense", "2D dense", "transformer_csan2d", {"csan2d_implementation": "dense"}),
    Variant("2d_banded", "2D banded", "transformer_csan2d", {"csan2d_implementation": "banded"}),
)
VARIANT_SETS = {"csan": CSAN_VARIANTS}


#: this module as ``python -m`` runs it (``__name__`` is ``__main__`` there)
MODULE = "fairseq_localness.benchmark.layer"


class LayerBenchmarkError(ValueError):
    """Bad input: the message names the flag."""


def build_layer(variant: Variant, model: Dict[str, str]):
    """The variant's first encoder self-attention, in training mode, as fairseq-train builds the model."""
    import torch

    from ..modelbuild import build_translation_model, parse_model_args, synthetic_dictionary

    torch.manual_seed(1)
    args = parse_model_args(variant.arch, overrides={**model, **variant.overrides})
    dictionary = synthetic_dictionary(64)  # the layer does not see the vocabulary
    _task, built = build_translation_model(args, dictionary, dictionary)
    return built.encoder.layers[0].self_attn.train(), args.encoder_embed_dim


def _batch(length: int, tokens: int, width: int):
    import torch

    torch.manual_seed(2)
    return torch.randn(length, tokens // length, width, requires_grad=True)


def saved_mib(layer, x) -> float:
    """MiB of the distinct storages autograd keeps for backward in one call, parameters and ``x`` excluded."""
    import torch

    excluded = {p.untyped_storage().data_ptr() for p in layer.parameters()} | {x.untyped_storage().data_ptr()}
    kept: Dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in excluded:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x, x, x, key_padding_mask=None, need_weights=False)
    return sum(kept.values()) / 2 ** 20


def measure_case(variant: Variant, length: int, tokens: int, steps: int, model: Dict[str, str]) -> dict:
    """One (variant, length) in this process: the minimum CPU milliseconds of a forward + backward and the MiB kept."""
    import torch

    torch.set_num_threads(1)
    layer, width = build_layer(variant, model)
    x = _batch(length, tokens, width)
    memory = saved_mib(layer, x)
    times = []
    for step in range(steps + 1):
        layer.zero_grad(set_to_none=True)
        x.grad = None
        start = time.process_time()
        layer(x, x, x, key_padding_mask=None, need_weights=False)[0].sum().backward()
        if step:  # the first step is untimed: it allocates what the others reuse
            times.append((time.process_time() - start) * 1000)
    return {"variant": variant.name, "length": length, "milliseconds": min(times), "mib": memory}


def run_case_in_fresh_process(variant: Variant, length: int, tokens: int, steps: int, model: Dict[str, str]) -> dict:
    case = json.dumps({"variant": asdict(variant), "length": length, "tokens": tokens, "steps": steps, "model": model})
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", MODULE, "--case", case], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"{variant.name} at length {length} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def records_by_length(results: Sequence[dict], lengths: Sequence[int]) -> List[dict]:
    """One record per length: the variants' milliseconds and MiB side by side."""
    rows = []
    for length in lengths:
        cases = [r for r in results if r["length"] == length]
        rows.append({"length": length,
                     "milliseconds": {r["variant"]: round(r["milliseconds"], 1) for r in cases},
                     "mib": {r["variant"]: round(r["mib"], 2) for r in cases}})
    return rows


def parse_model(text: str) -> Dict[str, str]:
    try:
        model = json.loads(text)
    except json.JSONDecodeError as err:
        raise LayerBenchmarkError(f"--model must be a JSON object of fairseq options: {err}") from None
    if not isinstance(model, dict):
        raise LayerBenchmarkError("--model must be a JSON object of fairseq options, e.g. '{\"encoder_embed_dim\": 256}'")
    return {str(k): str(v) for k, v in model.items()}


def check_model_options(variants: Sequence[Variant], model: Dict[str, str]) -> None:
    """Every variant's options parse as fairseq-train parses them: a bad --model key is named here, before any case
    runs, not in a fresh process's traceback."""
    from ..modelbuild import parse_model_args

    for variant in variants:
        try:
            parse_model_args(variant.arch, overrides={**model, **variant.overrides})
        except ValueError as err:  # ModelOptionError, or a value of the wrong type
            raise LayerBenchmarkError(f"--model: {err}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"python -m {MODULE}",
        description="Forward + backward CPU time and activation memory of one encoder self-attention layer, "
                    "per variant and length (each case in a fresh process, one thread).")
    p.add_argument("--variants", default="csan", choices=sorted(VARIANT_SETS), help="the set of variants (columns)")
    p.add_argument("--seq-lens", default="32,64,128,256,512,1024", help="comma-separated sentence lengths")
    p.add_argument("--tokens", type=int, default=4096, help="tokens per batch: tokens // length sentences")
    p.add_argument("--steps", type=int, default=5, help="timed steps per case (the minimum is reported)")
    p.add_argument("--model", default="{}", help="fairseq options for every variant's model, as JSON")
    p.add_argument("--run-json", metavar="PATH", help="write the run (records, date, machine, command) as JSON")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --run-json file")
    p.add_argument("--case", help=argparse.SUPPRESS)  # one case, in the fresh process run_case_in_fresh_process starts
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    opts = parser.parse_args(argv)
    if opts.case:
        case = json.loads(opts.case)
        print(json.dumps(measure_case(Variant(**case["variant"]), case["length"], case["tokens"], case["steps"],
                                      case["model"])))
        return 0
    try:
        lengths = parse_seq_lens(opts.seq_lens)
        model = parse_model(opts.model)
        if opts.steps < 1:
            raise LayerBenchmarkError(f"--steps must be >= 1, got {opts.steps}")
        if opts.tokens < max(lengths):
            raise LayerBenchmarkError(f"--tokens {opts.tokens} is less than the longest --seq-lens {max(lengths)}")
        problem = opts.run_json and result_file_problem(opts.run_json, "--run-json", opts.overwrite)
        if problem:
            raise LayerBenchmarkError(problem)
        check_model_options(VARIANT_SETS[opts.variants], model)
    except (LayerBenchmarkError, BenchmarkError) as err:
        parser.error(str(err))
    import torch

    variants = VARIANT_SETS[opts.variants]
    started, load_before = utc_now(), load_average()
    results = []
    for length in lengths:
        for variant in variants:
            result = run_case_in_fresh_process(variant, length, opts.tokens, opts.steps, model)
            print(f"length {length:>5}  {variant.name:<13} {result['milliseconds']:9.1f} ms  {result['mib']:8.2f} MiB",
                  flush=True)
            results.append(result)
    if opts.run_json:
        run = {**run_header(started, load_before, load_average(), command_line(f"python -m {MODULE}", argv),
                            torch_version=torch.__version__),
               "source": "written by the command (--run-json)",
               "settings": {"tokens": opts.tokens, "steps": opts.steps, "model": model},
               "variants": [asdict(v) for v in variants], "records": records_by_length(results, lengths)}
        write_result_file(opts.run_json, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
