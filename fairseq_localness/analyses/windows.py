"""Learned windows: Yang et al. (2018) Figures 2-3 and Nguyen et al. (2020)'s soft windows.

* ``head_window_rows`` -- D_m = N * sigmoid(z_m) of every head of the head-specific
  Gaussian model (Yang 2018 Eq. 11, Figure 2); read from the parameters, no data needed.
* ``collect_scopes`` -- the predicted centre P_i and window D_i (Eq. 6-7) of every real
  query of a split, per layer (Figure 3: P against D, and the distribution of D).
* ``soft_window_width`` / ``collect_soft_windows`` -- the differentiable window's mask
  M (Eq. 9) and its width E|r - l| + 1 (the expected number of tokens between the
  two boundary pointers), per layer, and the masks of chosen sentences.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .loading import AnalysisError, LoadedModel, PassOptions, forward_passes, require_method
from .output import SYSTEM_COLOURS, Table, figure

# --- Yang 2018 Figure 2 --------------------------------------------------------------------------------------------


def head_window_rows(loaded: LoadedModel) -> List[Tuple[str, int, int, float, float]]:
    """(attention type, layer, head, D_m, N) with D_m = N * sigmoid(z_m) (Yang 2018 Eq. 11)."""
    blocks = require_method(loaded, "head-windows", "gaussian", condition=lambda m: m.options.window == "head",
                            need="with --gaussian-window head (the head-specific model of Yang 2018, Eq. 11)")
    rows = []
    for block, method in blocks:
        sizes = method.options.head_window_max * torch.sigmoid(method.z.detach().float().cpu())
        rows += [(block.spec.attn_type, block.spec.layer, head + 1, float(d), method.options.head_window_max)
                 for head, d in enumerate(sizes)]
    return sorted(rows)


def head_windows(models: Sequence[LoadedModel]):
    table = Table(["model", "attention", "layer", "head", "window_D", "N"],
                  caption="Yang et al. (2018) Figure 2: learned window size D_m = N sigmoid(z_m) (Eq. 11) per head and layer.")
    for loaded in models:
        for attn_type, layer, head, size, most in head_window_rows(loaded):
            table.add(model=loaded.label, attention=attn_type, layer=layer, head=head, window_D=size, N=most)
    panels = sorted({(row["model"], row["attention"]) for row in table.rows})
    fig, axes = figure(1, len(panels), width=3.2, height=2.4)
    heads = sorted({row["head"] for row in table.rows})
    colours = {h: f"C{i % 10}" for i, h in enumerate(heads)}
    for ax, (model, attn_type) in zip(axes[0], panels):
        rows = [r for r in table.rows if r["model"] == model and r["attention"] == attn_type]
        for head in heads:
            mine = [r for r in rows if r["head"] == head]
            ax.scatter([r["window_D"] for r in mine], [r["layer"] for r in mine], color=colours[head], label=f"head {head}", s=18)
        ax.set_xlabel("window size $D_m$")
        ax.set_xlim(0, max(r["N"] for r in rows))  # D_m lies in (0, N)
        ax.set_ylabel("layer")
        ax.set_yticks(sorted({r["layer"] for r in rows}))
        ax.set_title(f"{model} ({attn_type})")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return table, fig


# --- Yang 2018 Figure 3 --------------------------------------------------------------------------------------------


@dataclass
class Scopes:
    """Per layer: every real query's window D, and a random sample of (P, D, I) triples for the scatter."""

    strategy: str
    windows: Dict[int, List[Tensor]] = field(default_factory=lambda: defaultdict(list))
    relative: Dict[int, List[Tensor]] = field(default_factory=lambda: defaultdict(list))
    samples: Dict[int, List[Tuple[int, int, int, int, float, float]]] = field(default_factory=lambda: defaultdict(list))


def query_mask(capture, loaded: LoadedModel, attn_type: str) -> Tensor:
    """(B, T) real query positions of an attention type (source for the encoder, target otherwise)."""
    return capture.source_mask(loaded) if attn_type == "encoder" else capture.target_mask(loaded)


def collect_scopes(loaded: LoadedModel, options: PassOptions, attn_type: str = "encoder", sample_per_layer: int = 2000,
                   seed: int = 1) -> Scopes:
    """P and D of every real query and head, from the values the Gaussian method records (Eq. 6-7)."""
    blocks = require_method(loaded, "gaussian-scopes", "gaussian", attn_type)
    scopes = Scopes(strategy=blocks[0][1].options.window)
    rng = random.Random(seed)
    seen: Dict[int, int] = defaultdict(int)
    for capture in forward_passes(loaded, options, "gaussian-scopes"):
        valid = query_mask(capture, loaded, attn_type)
        ids = capture.sample["id"].tolist()
        centres = capture.records.by_layer("gaussian_center", attn_type)
        for layer, window in capture.records.by_layer("gaussian_window", attn_type).items():
            centre = centres[layer]  # (B, T, H)
            window = window.expand_as(centre).float()
            length = valid.sum(dim=1, keepdim=True).float()  # I
            positions = (valid.long().cumsum(dim=1) - 1)
            scopes.windows[layer].append(window[valid].flatten().cpu())
            scopes.relative[layer].append((window / length.unsqueeze(-1))[valid].flatten().cpu())
            for b, t in valid.nonzero().tolist():  # reservoir sample of (sentence, position, head)
                for h in range(centre.size(-1)):
                    seen[layer] += 1
                    item = (ids[b], int(positions[b, t]), h + 1, int(length[b]), float(centre[b, t, h]), float(window[b, t, h]))
                    bucket = scopes.samples[layer]
                    if len(bucket) < sample_per_layer:
                        bucket.append(item)
                    else:
                        slot = rng.randrange(seen[layer])
                        if slot < sample_per_layer:
                            bucket[slot] = item
    return scopes


def scopes_tables(collected: Dict[str, Scopes], attn_type: str = "encoder") -> Tuple[Table, Table]:
    summary = Table(["model", "strategy", "attention", "layer", "query_heads", "mean_D", "median_D", "p10_D", "p90_D", "mean_D_over_I"],
                    caption="Yang et al. (2018) Figure 3: predicted window D (Eq. 7) per layer over the split's real queries "
                            "and heads (query_heads: their number); D/I is the window relative to the sentence length I.")
    samples = Table(["model", "layer", "sentence", "position", "head", "length_I", "centre_P", "window_D"])
    for label, scopes in collected.items():
        for layer in sorted(scopes.windows):
            d = torch.cat(scopes.windows[layer])
            q = torch.quantile(d, torch.tensor([0.1, 0.5, 0.9])).tolist() if d.numel() else [float("nan")] * 3
            summary.add(model=label, strategy=scopes.strategy, attention=attn_type, layer=layer, query_heads=d.numel(),
                        mean_D=float(d.mean()), median_D=q[1], p10_D=q[0], p90_D=q[2],
                        mean_D_over_I=float(torch.cat(scopes.relative[layer]).mean()))
            for sent, pos, head, length, centre, window in sorted(scopes.samples[layer]):
                samples.add(model=label, layer=layer, sentence=sent, position=pos, head=head, length_I=length,
                            centre_P=centre, window_D=window)
    return summary, samples


def scopes_figure(collected: Dict[str, Scopes]):
    layers = sorted({layer for scopes in collected.values() for layer in scopes.windows})
    fig, axes = figure(2, len(layers), width=2.4, height=2.2)
    top = max((float(torch.cat(s.windows[l]).max()) for s in collected.values() for l in s.windows), default=1.0)
    bins = torch.linspace(0, max(top, 1e-3), 31).tolist()
    for column, layer in enumerate(layers):
        scatter, hist = axes[0][column], axes[1][column]
        for colour, (label, scopes) in zip(SYSTEM_COLOURS, collected.items()):
            if layer not in scopes.windows:
                continue
            points = scopes.samples[layer]
            scatter.scatter([p[5] for p in points], [p[4] for p in points], s=3, alpha=0.4, color=colour,
                            label=f"{label} ({scopes.strategy})")
            hist.hist(torch.cat(scopes.windows[layer]).tolist(), bins=bins, density=True, alpha=0.5, color=colour)
        scatter.set_title(f"layer {layer}")
        scatter.set_xlabel("window D")
        hist.set_xlabel("window D")
        if column == 0:
            scatter.set_ylabel("centre P")
            hist.set_ylabel("density")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, markerscale=3)
    return fig


# --- Nguyen 2020 soft windows ----------------------------------------------------------------------------------------


def soft_window_width(left: Tensor, right: Tensor) -> Tensor:
    """E|r - l| + 1 (B, H, T): expected number of tokens from one boundary pointer to the other.

    Equals sum_j M_j - P(l = r) for the mask of Eq. 9 (a collapsed window is counted by both of its terms).
    """
    positions = torch.arange(left.size(-1), device=left.device, dtype=torch.float32)
    distance = (positions[:, None] - positions[None, :]).abs()  # |a - b|, (S, S)
    expected = torch.einsum("...a,ab,...b->...", left.float(), distance, right.float())
    return expected + 1.0


@dataclass
class SoftWindows:
    widths: Dict[int, List[Tensor]] = field(default_factory=lambda: defaultdict(list))  # layer -> (queries, H) widths
    examples: Dict[int, Dict[int, Tuple[Tensor, List[str], List[str]]]] = field(default_factory=dict)  # id -> layer -> mask


def collect_soft_windows(loaded: LoadedModel, options: PassOptions, method: str = "diffwin_enc",
                         sentences: Sequence[int] = (0,)) -> SoftWindows:
    blocks = require_method(loaded, "diffwin-windows", method)
    attn_type = blocks[0][0].spec.attn_type
    found = SoftWindows()
    wanted = set(sentences)
    src_dict, tgt_dict = loaded.source_dictionary, loaded.target_dictionary
    for capture in forward_passes(loaded, options, "diffwin-windows"):
        queries = query_mask(capture, loaded, attn_type)
        keys = capture.source_mask(loaded) if attn_type in ("encoder", "cross") else capture.target_mask(loaded)
        lefts = capture.records.by_layer(f"{method}_left", attn_type)
        rights = capture.records.by_layer(f"{method}_right", attn_type)
        masks = capture.records.by_layer(f"{method}_mask", attn_type)
        for layer in sorted(masks):
            width = soft_window_width(lefts[layer], rights[layer])  # (B, H, T)
            found.widths[layer].append(width.transpose(1, 2)[queries].cpu())
            for b, sentence in enumerate(capture.sample["id"].tolist()):
                if sentence not in wanted:
                    continue
                q_index, k_index = queries[b].nonzero().flatten(), keys[b].nonzero().flatten()
                mask = masks[layer][b][:, q_index][:, :, k_index].cpu()  # (H, T_real, S_real)
                q_tokens = capture.sample["net_input"]["src_tokens" if attn_type == "encoder" else "prev_output_tokens"][b][q_index]
                k_tokens = capture.sample["net_input"]["src_tokens" if attn_type != "decoder" else "prev_output_tokens"][b][k_index]
                q_words = [(src_dict if attn_type == "encoder" else tgt_dict)[i] for i in q_tokens.tolist()]
                k_words = [(tgt_dict if attn_type == "decoder" else src_dict)[i] for i in k_tokens.tolist()]
                found.examples.setdefault(sentence, {})[layer] = (mask, q_words, k_words)
    missing = wanted - set(found.examples)
    if missing:
        raise AnalysisError(f"--sentences: id(s) {sorted(missing)} are not in split {options.split} "
                            f"(of the sentences read; see --max-sentences)")
    return found


def soft_window_outputs(label: str, method: str, windows: SoftWindows, head: Optional[int] = None):
    table = Table(["model", "method", "layer", "head", "queries", "mean_width"],
                  caption=f"Nguyen et al. (2020): mean soft-window width E|r - l| + 1 of {method} (Eq. 7-9) per layer "
                          "(head 'all': averaged over heads).")
    for layer in sorted(windows.widths):
        widths = torch.cat(windows.widths[layer])  # (queries, H)
        table.add(model=label, method=method, layer=layer, head="all", queries=widths.size(0), mean_width=float(widths.mean()))
        for h in range(widths.size(1)):
            table.add(model=label, method=method, layer=layer, head=h + 1, queries=widths.size(0), mean_width=float(widths[:, h].mean()))
    layers = sorted(windows.widths)
    sentences = sorted(windows.examples)
    fig, axes = figure(len(sentences) + 1, len(layers), width=2.6, height=2.4)
    for column, layer in enumerate(layers):
        for row, sentence in enumerate(sentences):
            ax = axes[row][column]
            mask, q_words, k_words = windows.examples[sentence][layer]
            shown = mask.mean(dim=0) if head is None else mask[head - 1]
            ax.imshow(shown.numpy(), cmap="Blues", vmin=0, vmax=max(1.0, float(shown.max())), aspect="auto")
            ax.set_title(f"sent {sentence}, layer {layer}" + ("" if head is None else f", head {head}"))
            ax.set_xticks(range(len(k_words)), k_words, rotation=90, fontsize=5)
            ax.set_yticks(range(len(q_words)), q_words, fontsize=5)
            ax.grid(False)
        if column > 0:
            axes[-1][column].axis("off")
    ax = axes[-1][0]
    overall = [r["mean_width"] for r in table.rows if r["head"] == "all"]
    ax.plot(layers, overall, marker="o", color="tab:blue")
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("mean window width")
    return table, fig
