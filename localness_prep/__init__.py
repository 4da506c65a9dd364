"""Data preparation: the ``data-prep/prepare-*.sh`` scripts and their helpers, a package of its own beside the
``fairseq_localness`` plugin (the same distribution installs both).

Nothing here imports torch, fairseq or ``fairseq_localness`` (whose ``__init__`` imports both, as fairseq's
``--user-dir`` needs), so a script or helper starts quickly; the plugin's own code (the probing tool, the
evaluation) imports these modules under this one name (``tests/test_prep_imports.py``, ``tests/test_import_graph.py``).

* :mod:`.prepare` -- one module per data-prep script (``data-prep/prepare-iwslt14.sh`` runs
  ``python -m localness_prep.prepare.iwslt14``): its usage, options, defaults and steps.
* :mod:`.script`  -- what the scripts share: the common options, the checks of ``--out`` and ``--raw-dir``,
  inputs (located, downloaded, extracted), numbered steps, BPE, binarisation, ``prep-info.json``, the summary.
* :mod:`.shellquote` -- the arguments quoted as the shell does, for ``.prep-done`` and the messages.

The helpers, each a small command-line tool (``python -m localness_prep.<module> ...``) that the scripts call
in their own process:

* :mod:`.tokenize`  -- Moses (sacremoses) / jieba / fugashi tokenisation, detokenisation.
* :mod:`.clean`     -- length and length-ratio filtering (Moses ``clean-corpus-n.perl`` semantics).
* :mod:`.iwslt_xml` -- plain text from IWSLT/WMT XML and SGML files and the TED ``train.tags`` format.
* :mod:`.aspec`     -- Japanese/English columns of ASPEC-JE ``train-*.txt``/``dev.txt``/``test.txt``.
* :mod:`.spm`       -- SentencePiece training and encoding (the pip wheel ships no ``spm_*`` binaries).
* :mod:`.checks`    -- UTF-8 validity, equal line counts, and the final size report.
* :mod:`.sample`    -- how ``data/sample-zh-en`` was cut from the Tatoeba/manythings corpus.
* :mod:`.senteval`  -- SentEval's probing files (``tr|va|te<TAB>label<TAB>sentence``): checks, copies.
* :mod:`.multi30k`  -- Multi30k Task 1 splits: checks of the published pair counts, copies.
* :mod:`.sst`       -- SST-2 (SentEval's files) into the sentence_prediction layout.
* :mod:`.imdb`      -- aclImdb reviews (dev set of whole movies) into the sentence_prediction layout.
* :mod:`.sva`       -- Linzen et al. (2016)'s agreement tsv: prefixes up to the verb, number labels, splits.
* :mod:`.lm_corpus` -- One Billion Word shards and the news-English stand-in for language modelling.
* :mod:`.summarization` -- CNN/DM and Gigaword ``.source/.target`` checks, BERT WordPiece tokenisation.
* :mod:`.kftt`      -- the KFTT 30k sample's splits: checks of the published pair counts, copies.
* :mod:`.length_split` -- a train-short / test-long split by source length.
* :mod:`.cwmt`      -- the CWMT corpora of WMT17 Chinese-English as line-aligned text.
"""
