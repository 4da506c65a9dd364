"""The hybrid model's gate: Xu et al. (2019) Figure 3 (mean gate per layer) and Figure 4 (per POS tag).

The gate g_i = sigmoid(W_g H_i) (Eq. 5) weighs the local pattern against the
global one (Eq. 4); ``methods/hybrid.py`` records it as ``hybrid_gate``
(B, T, 1 or H). Averages run over the real tokens of the split (every head
when the gate is per head); the end-of-sentence token is a real token of the
fairseq source and is included in Figure 3, but not in Figure 4, which groups
BPE pieces back into the words the tag file tags.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

from .loading import AnalysisError, LoadedModel, PassOptions, forward_passes, require_method
from .output import SYSTEM_COLOURS, Table, figure
from .windows import query_mask

BPE_KINDS = ("auto", "subword_nmt", "sentencepiece", "none")
#: Xu et al. (2019) footnote 2: the tags of Figure 4 (the universal tagset of Petrov et al.)
XU2019_TAGS = ("SYM", "DET", "CONJ", "PRT", "PRON", "ADP", "NOUN", "VERB", "ADV", "NUM", "ADJ", "X")


def mean_gate_by_layer(loaded: LoadedModel, options: PassOptions, attn_type: str = "encoder") -> Dict[int, Tuple[float, int]]:
    """{layer: (mean gate over real tokens and heads, tokens)} over the split (Figure 3)."""
    require_method(loaded, "gate-layers", "hybrid", attn_type, condition=lambda m: m.options.combine == "gate",
                   need="with --hybrid-combine gate (Eq. 4-5)")
    sums: Dict[int, float] = defaultdict(float)
    counts: Dict[int, int] = defaultdict(int)
    for capture in forward_passes(loaded, options, "gate-layers"):
        valid = query_mask(capture, loaded, attn_type)
        for layer, gate in capture.records.by_layer("hybrid_gate", attn_type).items():
            per_token = gate.float().mean(dim=-1)[valid]  # heads averaged
            sums[layer] += float(per_token.sum())
            counts[layer] += per_token.numel()
    return {layer: (sums[layer] / max(counts[layer], 1), counts[layer]) for layer in sorted(sums)}


def gate_layers(models: Sequence[LoadedModel], options: PassOptions, attn_type: str = "encoder"):
    table = Table(["model", "attention", "layer", "tokens", "mean_gate"],
                  caption="Xu et al. (2019) Figure 3: mean gate g (Eq. 5), the weight of the local pattern, per layer.")
    fig, axes = figure(1, 1, width=3.4, height=2.4)
    ax = axes[0][0]
    for colour, loaded in zip(SYSTEM_COLOURS, models):
        means = mean_gate_by_layer(loaded, options, attn_type)
        for layer, (mean, count) in means.items():
            table.add(model=loaded.label, attention=attn_type, layer=layer, tokens=count, mean_gate=mean)
        ax.plot(list(means), [m for m, _ in means.values()], marker="o", color=colour, label=loaded.label)
        ax.set_xticks(list(means))
    ax.set_xlabel("layer")
    ax.set_ylabel("mean gate (local weight)")
    ax.legend(frameon=False)
    return table, fig


# --- Figure 4: per POS tag -------------------------------------------------------------------------------------------


def group_pieces(pieces: Sequence[str], bpe: str = "auto") -> List[List[int]]:
    """Indices of the BPE pieces of each word: subword-nmt marks continuation with a trailing '@@',
    sentencepiece marks a word start with a leading '\u2581'; 'none' makes every piece a word."""
    if bpe not in BPE_KINDS:
        raise AnalysisError(f"--bpe must be one of {', '.join(BPE_KINDS)}, got {bpe!r}")
    if bpe == "auto":
        if any(p.endswith("@@") for p in pieces):
            bpe = "subword_nmt"
        elif any(p.startswith("\u2581") for p in pieces):
            bpe = "sentencepiece"
        else:
            bpe = "none"
    words: List[List[int]] = []
    continues = False
    for index, piece in enumerate(pieces):
        if bpe == "sentencepiece":
            start = piece.startswith("\u2581") or not words
        else:
            start = not continues
            continues = bpe == "subword_nmt" and piece.endswith("@@")
        if start:
            words.append([index])
        else:
            words[-1].append(index)
    return words


def read_tags(path: str) -> List[List[str]]:
    try:
        with open(path, encoding="utf-8") as f:
            return [line.split() for line in f]
    except OSError as exc:
        raise AnalysisError(f"--tags {path}: cannot read it ({exc})") from exc


def word_gates(pieces: Sequence[str], gates: Sequence[float], bpe: str = "auto") -> List[float]:
    """The gate of each word: the mean over its pieces."""
    return [sum(gates[i] for i in word) / len(word) for word in group_pieces(pieces, bpe)]


def gate_by_tag(loaded: LoadedModel, options: PassOptions, tags_path: str, layer: int = 1, bpe: str = "auto",
                attn_type: str = "encoder") -> Dict[str, Tuple[float, int]]:
    """{tag: (mean word gate, words)} at ``layer`` (Figure 4); tag line k belongs to sentence id k of the split."""
    require_method(loaded, "gate-pos", "hybrid", attn_type, condition=lambda m: m.options.combine == "gate",
                   need="with --hybrid-combine gate (Eq. 4-5)")
    tags = read_tags(tags_path)
    dictionary = loaded.source_dictionary
    sums: Dict[str, float] = defaultdict(float)
    counts: Dict[str, int] = defaultdict(int)
    found_layer = False
    for capture in forward_passes(loaded, options, "gate-pos"):
        gates = capture.records.by_layer("hybrid_gate", attn_type)
        if layer not in gates:
            raise AnalysisError(f"--layer {layer}: the hybrid gate is at {attn_type} layer(s) {sorted(gates)} of {loaded.path}")
        found_layer = True
        tokens = capture.sample["net_input"]["src_tokens"]
        for b, sentence in enumerate(capture.sample["id"].tolist()):
            keep = [i for i, t in enumerate(tokens[b].tolist()) if t not in (dictionary.pad(), dictionary.eos())]
            pieces = [dictionary[tokens[b, i]] for i in keep]
            values = gates[layer][b, keep].float().mean(dim=-1).tolist()
            words = word_gates(pieces, values, bpe)
            if sentence >= len(tags):
                raise AnalysisError(f"--tags {tags_path}: has {len(tags)} lines but split {options.split} has sentence {sentence} "
                                    "(one line of tags per source line, in the split's order)")
            line = tags[sentence]
            if len(line) != len(words):
                raise AnalysisError(
                    f"--tags {tags_path} line {sentence + 1}: {len(line)} tags for {len(words)} words "
                    f"({' '.join(''.join(pieces[i] for i in w).replace('@@', '') for w in group_pieces(pieces, bpe))!r}); "
                    "tag the tokenised source before BPE, one tag per word")
            for tag, value in zip(line, words):
                sums[tag] += value
                counts[tag] += 1
    if not found_layer:
        raise AnalysisError(f"split {options.split} gave no sentences")
    return {tag: (sums[tag] / counts[tag], counts[tag]) for tag in sorted(sums)}


def gate_pos(models: Sequence[LoadedModel], options: PassOptions, tags_path: str, layer: int = 1, bpe: str = "auto"):
    table = Table(["model", "layer", "tag", "words", "mean_gate"],
                  caption=f"Xu et al. (2019) Figure 4: mean gate g (Eq. 5) per POS tag at encoder layer {layer}; "
                          "a word's gate is the mean over its BPE pieces.")
    per_model = {loaded.label: gate_by_tag(loaded, options, tags_path, layer, bpe) for loaded in models}
    tags = sorted({tag for result in per_model.values() for tag in result},
                  key=lambda t: (XU2019_TAGS.index(t) if t in XU2019_TAGS else len(XU2019_TAGS), t))
    fig, axes = figure(1, 1, width=max(3.4, 0.35 * len(tags) * len(models)), height=2.4)
    ax = axes[0][0]
    width = 0.8 / max(len(per_model), 1)
    for index, (colour, (label, result)) in enumerate(zip(SYSTEM_COLOURS, per_model.items())):
        for tag in tags:
            if tag in result:
                table.add(model=label, layer=layer, tag=tag, words=result[tag][1], mean_gate=result[tag][0])
        xs = [i + index * width for i, tag in enumerate(tags) if tag in result]
        ax.bar(xs, [result[tag][0] for tag in tags if tag in result], width=width, color=colour, label=label)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(tags))], tags, rotation=45)
    ax.set_ylabel("mean gate (local weight)")
    if len(per_model) > 1:
        ax.legend(frameon=False)
    return table, fig


def spacy_tags(sentences: Sequence[str], model: str) -> List[List[str]]:
    """Universal POS tags from a spaCy pipeline (``pip install spacy`` and the model), one list per
    whitespace-tokenised sentence; the tokenisation is kept, so the tags line up with the words."""
    try:
        import spacy
        from spacy.tokens import Doc
    except ImportError as exc:
        raise AnalysisError("--tagger spacy:MODEL needs spaCy: pip install spacy, then python -m spacy download MODEL") from exc
    try:
        nlp = spacy.load(model)
    except OSError as exc:
        raise AnalysisError(f"--tagger spacy:{model}: the model is not installed (python -m spacy download {model})") from exc
    tagged = []
    for sentence in sentences:
        doc = nlp(Doc(nlp.vocab, words=sentence.split()))
        tagged.append([token.pos_ for token in doc])
    return tagged
