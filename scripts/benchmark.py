#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.benchmark` (also installed as ``fairseq-localness-benchmark``)."""

import sys

from fairseq_localness.benchmark.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
