#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.probing` (also installed as ``fairseq-localness-probe``)."""

from fairseq_localness.probing.cli import console_main

if __name__ == "__main__":
    console_main()
