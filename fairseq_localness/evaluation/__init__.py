"""Evaluation as in the localness papers: checkpoint averaging (:mod:`.average`), BLEU/sacreBLEU/chrF
and paired bootstrap significance (:mod:`.scoring`), and the ``scripts/evaluate.sh`` driver
(:mod:`.evaluate`)."""
