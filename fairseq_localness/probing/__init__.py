"""Linguistic probing of a translation model's frozen encoder (Xu et al. 2019, Tables 3-4).

``fairseq-localness-probe`` (``scripts/probe.py``); see docs/probing.md:

* encode.py -- load a translation checkpoint, freeze its encoder, apply the training data's
  preprocessing, mean-pool the top layer over real positions;
* classifier.py -- SentEval's probing MLP, grid-searched and early-stopped on the validation split;
* probe.py -- per-task runs, results table (with Conneau et al.'s group averages) and files;
* generators.py -- SentLen, WC and BShift built from any English text (Conneau et al. 2018).
The SentEval file format itself (reading, checks, writing) lives in :mod:`localness_prep.senteval` (the data-prep
package, which imports neither torch nor fairseq).
"""

from .encode import FrozenEncoder, Preprocessing, ProbingError, load_encoder

__all__ = ["FrozenEncoder", "Preprocessing", "ProbingError", "load_encoder"]
