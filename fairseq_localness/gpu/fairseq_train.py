"""``fairseq-train`` whose ``--bf16`` trains in bfloat16 where it runs (GPU or CPU), not on a TPU.

    python -m fairseq_localness.gpu.fairseq_train DATA --arch ... --bf16 [every fairseq-train option]

fairseq 0.12's argument parser turns ``--bf16`` into ``--tpu`` as well (``options.parse_args_and_arch``), and the
trainer then asks torch_xla for a TPU: on a GPU machine it stops with ``AttributeError: 'NoneType' object has no
attribute 'xla_device'`` (seen on an H200, docs/gpu.md). ``common.bf16=true`` through ``fairseq-hydra-train``
(and ``scripts/train.sh --bf16``) never had that implication. This entry parses the command line exactly as
``fairseq-train`` does and undoes only the implied ``--tpu`` (an explicit ``--tpu`` is kept); everything else is
fairseq's own ``cli_main``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """fairseq-train's arguments as fairseq parses them, without the ``--tpu`` that ``--bf16`` implies."""
    from fairseq import options

    explicit_tpu = "--tpu" in argv
    saved, sys.argv = sys.argv, [sys.argv[0], *argv]  # parse_args_and_arch reads sys.argv
    try:
        args = options.parse_args_and_arch(options.get_training_parser())
    finally:
        sys.argv = saved
    if getattr(args, "bf16", False) and not explicit_tpu:
        args.tpu = False
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    from fairseq import distributed_utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq_cli.train import main as train

    args = parse(list(sys.argv[1:] if argv is None else argv))
    distributed_utils.call_main(convert_namespace_to_omegaconf(args), train)


if __name__ == "__main__":
    main()
