"""Running experiments: the training launcher (:mod:`.launch`), reading runs back (:mod:`.runlog`) and the
paper-table reproduction (:mod:`.reproduce`)."""
