"""Abstractive summarization as Fan et al. (2021) ran it (Sec. 3.1.2, Table 2): decode settings, ROUGE, LEAD-3.

``settings``: the train/decode flags with their sources; ``rouge``: ROUGE-1/2/L F1 as files2rouge computes it
(pure Python, plus a wrapper around the original ROUGE-1.5.5.pl); ``lead3``: the LEAD-3 baseline; ``evaluation``:
decode and score a checkpoint as Table 2 was (``scripts/score_task.sh --task summarization``, run by reproduce).
See docs/summarization.md.
"""
