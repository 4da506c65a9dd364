#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.experiments.param_counts` (parameter counts and their delta over the
Transformer of the same size)."""

from fairseq_localness.experiments.param_counts import main

if __name__ == "__main__":
    main()
