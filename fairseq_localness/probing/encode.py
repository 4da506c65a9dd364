"""Sentence vectors from a trained translation model's frozen encoder (Xu et al. 2019, Section 5.1).

"The mean of the last encoding layer is passed to the classifier as the sentence representation"
and "the parameters of the encoders are fixed": the checkpoint is loaded with fairseq's
``checkpoint_utils.load_model_ensemble_and_task`` (the plugin registered as ``--user-dir`` does),
its encoder runs in eval mode without gradients, and each sentence's vector is the mean of the top
layer's output over its real positions (its subwords and the end-of-sentence symbol that fairseq's
translation task appends to every source; padding excluded).

Before encoding, a sentence gets the preprocessing the model's training source had: optional Moses
tokenisation (SentEval's text is already Moses-tokenised, so the default is none), optional lower
casing, then the BPE model (subword-nmt codes or a sentencepiece model) and the source dictionary.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import torch
from torch import Tensor, nn

from ..paths import USER_DIR


class ProbingError(Exception):
    """Bad input for probing; the message names the flag or file to fix."""


@dataclass
class Preprocessing:
    """How a sentence becomes the model's source text (the training data's own steps)."""

    tokenizer: str = "none"          # "moses" (sacremoses, as data-prep/ does) or "none" (already tokenised)
    lang: str = "en"
    aggressive_dash: bool = False    # Moses -a (the WMT recipes in data-prep/ use it)
    lowercase: bool = False
    bpe_codes: Optional[str] = None  # subword-nmt codes file (data-prep/: OUT/code or OUT/code.en)
    spm_model: Optional[str] = None  # sentencepiece model (data-prep/ --bpe sentencepiece: OUT/spm*.model)

    def build(self) -> Callable[[str], str]:
        steps: List[Callable[[str], str]] = []
        if self.tokenizer == "moses":
            from localness_prep.tokenize import TokOptions, make_tokenizer
            steps.append(make_tokenizer(self.lang, TokOptions(segmenter="moses", aggressive_dash=self.aggressive_dash)))
        elif self.tokenizer != "none":
            raise ProbingError(f"--tokenizer must be moses or none, got {self.tokenizer!r}")
        if self.lowercase:
            steps.append(str.lower)
        if self.bpe_codes and self.spm_model:
            raise ProbingError("give --bpe-codes or --spm-model, not both")
        if self.bpe_codes:
            if not os.path.isfile(self.bpe_codes):
                raise ProbingError(f"--bpe-codes {self.bpe_codes}: no such file")
            from subword_nmt.apply_bpe import BPE
            not_codes = f"--bpe-codes {self.bpe_codes}: not a subword-nmt codes file (learn_bpe.py's output)"
            if _counts_file(self.bpe_codes):  # subword-nmt would read "word 12" lines as merges, and split every word
                raise ProbingError(f"{not_codes}: its lines are words and counts, as in a fairseq dict.*.txt")
            try:
                with open(self.bpe_codes, encoding="utf-8") as f:
                    bpe = BPE(f)
            except (SystemExit, UnicodeDecodeError, ValueError) as err:  # an unreadable line, or '#version: x'
                raise ProbingError(not_codes + ("" if isinstance(err, SystemExit) else f": {err}")) from None
            steps.append(lambda line: bpe.process_line(line).strip())
        if self.spm_model:
            if not os.path.isfile(self.spm_model):
                raise ProbingError(f"--spm-model {self.spm_model}: no such file")
            import sentencepiece as spm
            try:
                sp = spm.SentencePieceProcessor(model_file=self.spm_model)
            except (RuntimeError, OSError) as err:  # sentencepiece's own message names no flag
                raise ProbingError(f"--spm-model {self.spm_model}: not a sentencepiece model ({err})") from None
            steps.append(lambda line: " ".join(sp.encode(line, out_type=str)))

        def run(sentence: str) -> str:
            for step in steps:
                sentence = step(sentence)
            return " ".join(sentence.split())
        return run


def _counts_file(path: str) -> bool:
    """Whether every line of ``path`` is a word and a whole number (a fairseq dictionary, a vocabulary with counts):
    a codes file opens with learn_bpe.py's ``#version:`` line, and without one, some of its merges end in ``</w>``."""
    seen = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if line.startswith("#version:") and not seen:
                return False  # learn_bpe.py's header (its merges may all be digits: '1 9', '19 9')
            if not fields:
                continue
            if len(fields) < 2 or not fields[1].isdigit():
                return False
            seen = True
    return seen


def preprocessing_from_prep_dir(prep_dir: str, src_lang: str = "en") -> Preprocessing:
    """The BPE model and casing of a ``data-prep/prepare-*.sh --out`` directory (its data-bin/prep-info.json)."""
    info_path = os.path.join(prep_dir, "data-bin", "prep-info.json")
    if not os.path.isfile(info_path):
        raise ProbingError(f"--prep-dir {prep_dir}: no data-bin/prep-info.json (not a finished data-prep/prepare-*.sh "
                           "output); give --bpe-codes/--spm-model/--lowercase instead")
    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    prep = Preprocessing(lowercase=bool(info.get("lowercased")), lang=src_lang)
    names = ("spm.model", f"spm.{src_lang}.model") if info.get("bpe") == "sentencepiece" else ("code", f"code.{src_lang}")
    found = [os.path.join(prep_dir, n) for n in names if os.path.isfile(os.path.join(prep_dir, n))]
    if not found:
        raise ProbingError(f"--prep-dir {prep_dir}: no BPE model ({' or '.join(names)})")
    if info.get("bpe") == "sentencepiece":
        prep.spm_model = found[0]
    else:
        prep.bpe_codes = found[0]
    return prep


@dataclass
class FrozenEncoder:
    """A translation checkpoint's encoder and source dictionary, frozen."""

    path: str
    encoder: nn.Module
    dictionary: object
    max_positions: int
    device: torch.device


def load_encoder(path: str, data: Optional[str] = None, device: str = "cpu") -> FrozenEncoder:
    """Load ``path`` (a translation checkpoint) and freeze its encoder; ``data`` replaces its data directory."""
    import argparse

    from fairseq import checkpoint_utils, utils
    from fairseq.models import FairseqEncoderDecoderModel

    if not os.path.isfile(path):
        raise ProbingError(f"--checkpoint {path}: no such file")
    if data is not None and not os.path.isdir(data):
        raise ProbingError(f"--data {data}: no such directory (the fairseq-preprocess output with the dictionaries)")
    utils.import_user_module(argparse.Namespace(user_dir=str(USER_DIR)))  # the plugin's architectures
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": data} if data else None)
    except FileNotFoundError as exc:
        raise ProbingError(f"--checkpoint {path}: {exc}; if the training data moved, pass --data DIR "
                           "(the fairseq-preprocess output with dict.*.txt)") from exc
    except Exception as exc:  # fairseq raises many types for a bad file; say which file
        raise ProbingError(f"--checkpoint {path}: fairseq could not load it: {type(exc).__name__}: {exc}") from exc
    model = models[0]
    task_name = getattr(getattr(cfg, "task", None), "_name", None) or type(task).__name__
    if not isinstance(model, FairseqEncoderDecoderModel) or not hasattr(task, "source_dictionary") \
            or "translation" not in str(task_name):
        raise ProbingError(f"--checkpoint {path} is not a translation model (task {task_name}, model "
                           f"{type(model).__name__}); probing reads the encoder of an encoder-decoder translation model")
    encoder = model.encoder.to(torch.device(device)).eval()
    encoder.requires_grad_(False)
    max_positions = min(int(encoder.max_positions()), int(getattr(task.cfg, "max_source_positions", 1 << 30)))
    return FrozenEncoder(path, encoder, task.source_dictionary, max_positions, torch.device(device))


def mean_pool(states: Tensor, padding: Tensor) -> Tensor:
    """(B, C) mean of ``states`` (B, T, C) over the positions where ``padding`` (B, T) is False."""
    keep = (~padding).unsqueeze(-1).to(states.dtype)
    return (states * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)


@torch.no_grad()
def encode_sentences(frozen: FrozenEncoder, sentences: Sequence[str], preprocess: Callable[[str], str],
                     batch_size: int = 128, where: str = "") -> Tensor:
    """(N, C) float32 sentence vectors: mean of the top encoder layer over each sentence's real positions.

    Sentences are batched by length (fairseq's left padding for sources) and returned in input order.
    """
    from fairseq.data import data_utils

    d = frozen.dictionary
    token_ids = []
    for n, sentence in enumerate(sentences):
        ids = d.encode_line(preprocess(sentence), add_if_not_exist=False, append_eos=True).long()
        if ids.numel() > frozen.max_positions:
            raise ProbingError(f"{where} sentence {n + 1} has {ids.numel()} source tokens after preprocessing, more than "
                               f"the model's {frozen.max_positions} positions")
        token_ids.append(ids)
    order = sorted(range(len(token_ids)), key=lambda k: token_ids[k].numel())
    out = torch.empty(len(token_ids), 0)
    pieces = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        src = data_utils.collate_tokens([token_ids[k] for k in chunk], d.pad(), d.eos(), left_pad=True).to(frozen.device)
        lengths = src.ne(d.pad()).sum(dim=1)
        enc = frozen.encoder(src, src_lengths=lengths)
        states = enc["encoder_out"][0].transpose(0, 1)  # T x B x C -> B x T x C, after the last layer (and its norm)
        masks = enc.get("encoder_padding_mask") or []
        padding = masks[0] if masks else src.eq(d.pad())
        for k, vector in zip(chunk, mean_pool(states.float(), padding).cpu()):
            pieces[k] = vector
    if pieces:
        out = torch.stack([pieces[k] for k in range(len(token_ids))])
    return out
