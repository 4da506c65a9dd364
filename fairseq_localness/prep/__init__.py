"""Data-preparation helpers used by the ``data-prep/*.sh`` scripts.

Every module is a small command-line tool, run as
``python -m fairseq_localness.prep.<module> ...``:

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

None of them imports torch or fairseq, so each call starts quickly.
"""
