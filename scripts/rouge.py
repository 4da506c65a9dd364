#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.summarization.score` (files2rouge's ROUGE-1/2/L; docs/summarization.md)."""

from fairseq_localness.summarization.score import main

if __name__ == "__main__":
    main()
