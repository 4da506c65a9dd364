"""The data-prep scripts: one module per ``data-prep/prepare-*.sh`` (the shell file only finds the interpreter
and runs the module), e.g. ``data-prep/prepare-iwslt14.sh`` runs ``python -m localness_prep.prepare.iwslt14``.

Each module holds its script's usage text, its own options, its defaults and its steps; what the scripts share
(the common options, the output directory, the inputs, BPE, binarisation, the summary) is
:mod:`localness_prep.script`. The file names: ``prepare-1bw.sh`` is :mod:`.onebw`, ``prepare-lm-news-en.sh``
:mod:`.lm_news_en`, ``prepare-europarl-length.sh`` :mod:`.europarl_length`, ``prepare-senteval-probing.sh``
:mod:`.senteval_probing`, ``prepare-tatoeba-zh-en.sh`` :mod:`.tatoeba_zh_en`; ``prepare-cnndm.sh`` and
``prepare-gigaword.sh`` share :mod:`.summarization`.
"""
