#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.experiments.reproduce` (also installed as ``fairseq-localness-reproduce``)."""

import sys

from fairseq_localness.experiments.reproduce import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
