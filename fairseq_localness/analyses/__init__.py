"""The papers' analyses and figures, regenerated from fairseq checkpoints and translations.

``fairseq-localness-analyze NAME ...`` (``scripts/analyze.py``) runs one; see
``cli.ANALYSES`` for the list and docs/analyses.md for what each shows:

* windows.py -- Yang 2018 Fig. 2 (head windows) and Fig. 3 (centre/window per layer),
  Nguyen 2020 soft windows;
* gates.py -- Xu 2019 Fig. 3 (gate per layer) and Fig. 4 (gate per POS tag);
* attention.py -- Fan 2021 Table 5 (windowed attention mass, Eq. 13), heatmaps;
* bleu.py -- n-gram gaps (Yang 2018 Fig. 4, Yang 2019 Fig. 3), length buckets,
  sweeps (Yang 2019 Fig. 2, Xu 2019 Fig. 2).
"""

from .loading import AnalysisError, LoadedModel, PassOptions, load_checkpoint

__all__ = ["AnalysisError", "LoadedModel", "PassOptions", "load_checkpoint"]
