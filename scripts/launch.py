#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.experiments.train_cli` (also installed as ``fairseq-localness-launch``)."""

import sys

from fairseq_localness.experiments.train_cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
