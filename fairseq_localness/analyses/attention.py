"""Attention probabilities: Fan et al. (2021) Table 5 (windowed attention mass, Eq. 13) and heatmaps.

Eq. 13 sums, for every query token x_j of a sentence X_i, the head-averaged
attention s-bar^l_i[j, k] it gives to the tokens within w positions of it,
and averages over the T_i queries and over the sentences of the set D:

    attn_s(w, l, *) = 1/|D| sum_{X_i in D} 1/T_i sum_{x_j in X_i} sum_{|k - j| <= w} s-bar^l_{i,*}[j, k]

for * in {DMAN, SAN}. Table 5 reports it in percent. Here the sentence is
fairseq's source, end-of-sentence token included; DMAN and SAN are the
encoder sub-layers of a MAN model (``dman``, ``san``) or the self-attention
of a plain Transformer (``san``). The paper does not say which SAN it
measured: give both checkpoints, each is labelled.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

import yaml
from torch import Tensor

from ..paths import CONFIG_DIR, CheckoutError, require_checkout
from .loading import AnalysisError, LoadedModel, PassOptions, forward_passes
from .output import SYSTEM_COLOURS, Table, figure

PUBLISHED_FILE = CONFIG_DIR / "analyses_published.yaml"


def windowed_mass(probs: Tensor, valid: Tensor, window: int) -> Tensor:
    """Per sentence, 1/T sum_j sum_{|k-j|<=w} s-bar[j, k] (Eq. 13 before the average over D).

    probs (B, H, T, T) self-attention probabilities over one padded buffer (or
    (B, 1, T, T) already head-averaged), valid (B, T) real tokens. Distances
    count real tokens, so padding on either side changes nothing. Returns (B,).
    """
    mean = probs.float().mean(dim=1)  # s-bar: the average over heads
    position = valid.long().cumsum(dim=1)
    near = (position[:, :, None] - position[:, None, :]).abs() <= window
    near = near & valid[:, :, None] & valid[:, None, :]
    per_query = (mean * near).sum(dim=-1)  # (B, T)
    return (per_query * valid).sum(dim=1) / valid.sum(dim=1).clamp_min(1)


def attention_mass(loaded: LoadedModel, options: PassOptions, windows: Sequence[int] = (1, 2, 4),
                   layers: Optional[Sequence[int]] = None) -> Dict[Tuple[str, int, int], Tuple[float, int]]:
    """{(kind, layer, w): (attn_s in percent, sentences)} over the split's encoder self-attention blocks."""
    totals: Dict[Tuple[str, int, int], float] = defaultdict(float)
    sentences = 0
    for capture in forward_passes(loaded, options, "attention-mass", attention_of=("encoder",)):
        valid = capture.source_mask(loaded)
        sentences += valid.size(0)
        for (_, layer, kind), probs in capture.probs.items():
            if layers is not None and layer not in layers:
                continue
            for w in windows:
                totals[(kind, layer, w)] += float(windowed_mass(probs, valid, w).sum())
    if not totals:
        have = "no encoder self-attention" if layers is None else f"no encoder layer among {list(layers)}"
        raise AnalysisError(f"attention-mass: checkpoint {loaded.path} gave {have} over split {options.split}")
    return {key: (100.0 * total / sentences, sentences) for key, total in sorted(totals.items())}


def published_values(key: str = "fan2021_table5") -> Tuple[str, Dict[Tuple[str, int, int], dict]]:
    """(source, {(kind, layer, w): entry}) of the published mapping in configs/analyses_published.yaml, a file of the
    repository checkout (an install without one gets :class:`AnalysisError` saying how to point at one)."""
    if not PUBLISHED_FILE.is_file():
        try:
            require_checkout()
        except CheckoutError as err:
            raise AnalysisError(f"attention-mass sets its values beside the paper's, read from "
                                f"configs/{PUBLISHED_FILE.name}: {err}") from None
        raise AnalysisError(f"attention-mass: {PUBLISHED_FILE} is missing from the checkout")
    data = yaml.safe_load(PUBLISHED_FILE.read_text())["published"][key]
    return data["source"], {(v["kind"], int(v["layer"]), int(v["w"])): v for v in data["values"]}


def mass_table(models: Sequence[LoadedModel], options: PassOptions, windows: Sequence[int], layers: Optional[Sequence[int]],
               paper: Optional[Tuple[str, Dict[Tuple[str, int, int], dict]]] = None):
    """``paper``: :func:`published_values`, where the caller has read them already (else read here)."""
    source, published = paper if paper is not None else published_values()
    table = Table(["model", "kind", "layer", "w", "sentences", "attn_s_percent", "published_percent", "published_from"],
                  caption=f"Fan et al. (2021) Table 5, Eq. 13: attention mass within w tokens (percent), encoder self-attention. "
                          f"Published: {source} (a different data set and model size: compare the pattern, not the value).")
    for loaded in models:
        for (kind, layer, w), (value, count) in attention_mass(loaded, options, windows, layers).items():
            paper = published.get((kind.split("+")[0], layer, w))
            table.add(model=loaded.label, kind=kind, layer=layer, w=w, sentences=count, attn_s_percent=value,
                      published_percent=paper["value"] if paper else None,
                      published_from=f"Table {paper['table']}, row {paper['row']}, column {paper['column']}" if paper else None)
    return table


def mass_figure(table: Table):
    windows = sorted({row["w"] for row in table.rows})
    fig, axes = figure(1, len(windows), width=2.6, height=2.4)
    series = sorted({(row["model"], row["kind"]) for row in table.rows})
    for ax, w in zip(axes[0], windows):
        for colour, (model, kind) in zip(SYSTEM_COLOURS, series):
            rows = sorted((r for r in table.rows if r["w"] == w and r["model"] == model and r["kind"] == kind), key=lambda r: r["layer"])
            ax.plot([r["layer"] for r in rows], [r["attn_s_percent"] for r in rows], marker="o", color=colour, label=f"{model}: {kind}")
            paper = [r for r in rows if r["published_percent"] is not None]
            if paper:
                ax.plot([r["layer"] for r in paper], [r["published_percent"] for r in paper], marker="x", linestyle=":",
                        color=colour, label=f"paper: {kind}")
        ax.set_title(f"w = {w}")
        ax.set_xlabel("encoder layer")
        ax.set_xticks(sorted({r["layer"] for r in table.rows}))
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("attn_s (%)")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


# --- heatmap of any head -------------------------------------------------------------------------------------------


def attention_heatmap(loaded: LoadedModel, options: PassOptions, attn_type: str, layer: int, sentence: int,
                      head: Optional[int] = None) -> Dict[str, Tuple[Tensor, List[str], List[str]]]:
    """{kind: (weights (T, S) of ``head`` or the head mean, query tokens, key tokens)} of one sentence."""
    src_dict, tgt_dict = loaded.source_dictionary, loaded.target_dictionary
    for capture in forward_passes(loaded, options, "attention-heatmap", attention_of=(attn_type,)):
        ids = capture.sample["id"].tolist()
        if sentence not in ids:
            continue
        b = ids.index(sentence)
        net = capture.sample["net_input"]
        src, prev = net["src_tokens"][b], net["prev_output_tokens"][b]
        q_tokens, q_dict = (src, src_dict) if attn_type == "encoder" else (prev, tgt_dict)
        k_tokens, k_dict = (prev, tgt_dict) if attn_type == "decoder" else (src, src_dict)
        q_index, k_index = q_tokens.ne(q_dict.pad()).nonzero().flatten(), k_tokens.ne(k_dict.pad()).nonzero().flatten()
        found = {}
        for (_, at_layer, kind), probs in capture.probs.items():
            if at_layer != layer:
                continue
            if head is not None and not 1 <= head <= probs.size(1):
                raise AnalysisError(f"--head {head}: the {attn_type} attention of layer {layer} has {probs.size(1)} heads")
            weights = probs[b].mean(dim=0) if head is None else probs[b, head - 1]
            found[kind] = (weights[q_index][:, k_index].cpu(), [q_dict[i] for i in q_tokens[q_index].tolist()],
                           [k_dict[i] for i in k_tokens[k_index].tolist()])
        if not found:
            layers = sorted({key[1] for key in capture.probs})
            raise AnalysisError(f"--layer {layer}: {loaded.path} has {attn_type} attention at layers {layers}")
        return found
    raise AnalysisError(f"--sentence {sentence}: not in split {options.split} (of the sentences read; see --max-sentences)")


def heatmap_outputs(label: str, found: Dict[str, Tuple[Tensor, List[str], List[str]]], attn_type: str, layer: int,
                    sentence: int, head: Optional[int]):
    which = "mean of heads" if head is None else f"head {head}"
    table = Table(["model", "kind", "query", "query_token", "key", "key_token", "weight"],
                  caption=f"Attention of {label}, {attn_type} layer {layer}, {which}, sentence {sentence}.")
    fig, axes = figure(1, len(found), width=3.4, height=3.2)
    for ax, (kind, (weights, q_words, k_words)) in zip(axes[0], found.items()):
        for i, q in enumerate(q_words):
            for j, k in enumerate(k_words):
                table.add(model=label, kind=kind, query=i, query_token=q, key=j, key_token=k, weight=float(weights[i, j]))
        ax.imshow(weights.numpy(), cmap="Blues", vmin=0, aspect="auto")
        ax.set_xticks(range(len(k_words)), k_words, rotation=90, fontsize=6)
        ax.set_yticks(range(len(q_words)), q_words, fontsize=6)
        ax.grid(False)
        ax.set_title(f"{kind}: {attn_type} layer {layer}, {which}")
    return table, fig
