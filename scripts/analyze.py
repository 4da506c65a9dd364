#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.analyses` (also installed as ``fairseq-localness-analyze``)."""

from fairseq_localness.analyses.cli import console_main

if __name__ == "__main__":
    console_main()
