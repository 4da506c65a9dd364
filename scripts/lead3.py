#!/usr/bin/env python
"""Thin door into :mod:`fairseq_localness.summarization.lead3` (the LEAD-3 row; docs/summarization.md)."""

from fairseq_localness.summarization.lead3 import main

if __name__ == "__main__":
    main()
