"""Encoder-only sentence classifier for fairseq's ``sentence_prediction`` task (Nguyen et al. 2020, §5.3, Table 5).

The plugin's :class:`LocalnessTransformerEncoder` (so every encoder-side
locality method and its ``--<method>-*`` flags are available), a pooling of
its top layer and a classification head registered the way fairseq's
``sentence_prediction`` task expects (``register_classification_head``, called
by the task after the model is built; the criterion calls
``model(**net_input, features_only=True, classification_head_name=...)``).

Pooling (``--classifier-pooling``):
  mean   the mean of the top layer over the real tokens, padding excluded
         (default; the trailing </s> that fairseq-preprocess appends is a token)
  first  the first position (use with the task's ``--init-token 0`` to pool a <s> token)
Head: dropout + linear by default; ``--classifier-hidden-dim N`` puts a
dense layer of N units and a tanh in front (an MLP head).

Architectures (§5.3: "a 2-layer Transformer encoder with 4 attention heads,
128 hidden dimensions and 512 feedforward inner dimensions"; "our attention
methods are applied only to the first layer"): ``localness_classifier_tiny``
plus one named variant per Table 5 row (see ``TABLE5_ROWS``). The paper states
the layer-1 placement for its own methods; the Shaw and Yang baselines are
placed in layer 1 too here, so that the rows differ in the method only.
What the paper does not state (post-norm, sinusoidal positions,
dropout 0.1 with attention and activation dropout 0) is fairseq's Transformer
default here; the Table 5 recipes (configs/benchmark/nguyen2020_*_tiny.yaml)
set attention and activation dropout to 0.1 as tensor2tensor does.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, Optional

import torch
from fairseq.models import BaseFairseqModel, register_model
from fairseq.models.transformer import Embedding, TransformerConfig, TransformerModel, base_architecture
from torch import Tensor, nn

from ..attention.placement import LocalityPlan
from ..attention.errors import exit_on_config_error
from .base import (
    LocalnessTransformerEncoder,
    add_locality_args,
    as_namespace,
    localness_base_architecture,
    logger,
    register_locality_architectures,
)

MODEL_NAME = "localness_classifier"
POOLINGS = ("mean", "first")


def masked_mean(features: Tensor, padding_mask: Optional[Tensor]) -> Tensor:
    """Mean over time of ``features`` (T x B x C), skipping positions where ``padding_mask`` (B x T) is True."""
    if padding_mask is None:
        return features.mean(dim=0)
    keep = (~padding_mask).transpose(0, 1).unsqueeze(-1).type_as(features)  # T x B x 1
    return (features * keep).sum(dim=0) / keep.sum(dim=0).clamp(min=1.0)


class ClassificationHead(nn.Module):
    """dropout -> [dense -> tanh -> dropout] -> linear; the bracket only with ``hidden_dim > 0``."""

    def __init__(self, input_dim: int, num_classes: int, hidden_dim: int = 0, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.dense = nn.Linear(input_dim, hidden_dim) if hidden_dim > 0 else None
        self.out_proj = nn.Linear(hidden_dim if hidden_dim > 0 else input_dim, num_classes)

    def forward(self, pooled: Tensor) -> Tensor:
        x = self.dropout(pooled)
        if self.dense is not None:
            x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)


@register_model(MODEL_NAME)
class LocalnessClassifierModel(BaseFairseqModel):
    """Locality Transformer encoder + pooling + named classification heads."""

    def __init__(self, args: argparse.Namespace, encoder: LocalnessTransformerEncoder):
        super().__init__()
        self.args = args
        self.encoder = encoder
        self.classification_heads = nn.ModuleDict()

    @classmethod
    def add_args(cls, parser):
        TransformerModel.add_args(parser)  # the encoder's options; decoder options are ignored
        add_locality_args(parser)
        parser.add_argument("--classifier-pooling", choices=POOLINGS,
                            help="how the top layer becomes one vector: mean over real tokens "
                            "(padding excluded) or the first position [mean]")
        parser.add_argument("--classifier-hidden-dim", type=int, metavar="N",
                            help="units of the head's tanh layer; 0 = a linear head [0]")
        parser.add_argument("--classifier-dropout", type=float, metavar="P",
                            help="dropout on the pooled vector (and the hidden layer) [the model's --dropout]")

    @classmethod
    @exit_on_config_error  # fairseq-train: the message and exit status 2, no traceback
    def build_model(cls, args, task):
        args = as_namespace(args)
        localness_classifier_base(args)
        # the task's --max-positions bounds the input; there is no decoder and no cross-attention
        args.max_source_positions = int(getattr(args, "max_positions", None) or args.max_source_positions)
        args.decoder_layers, args.no_cross_attention = 0, True
        plan = LocalityPlan.from_args(args)  # validates before anything is built (decoder/cross -> clear error)
        logger.info("locality: %s", plan.describe())
        dictionary = task.source_dictionary
        embed_tokens = Embedding(len(dictionary), args.encoder_embed_dim, dictionary.pad())
        encoder = LocalnessTransformerEncoder(TransformerConfig.from_namespace(args), dictionary, embed_tokens)
        return cls(args, encoder)

    def register_classification_head(self, name: str, num_classes: Optional[int] = None,
                                     inner_dim: Optional[int] = None, **kwargs) -> None:
        if name in self.classification_heads:
            old = self.classification_heads[name].out_proj.out_features
            if num_classes != old:
                logger.warning('re-registering head "%s" with num_classes %s (previously %s)', name, num_classes, old)
        hidden = self.args.classifier_hidden_dim if inner_dim is None else inner_dim
        self.classification_heads[name] = ClassificationHead(
            self.args.encoder_embed_dim, int(num_classes), hidden_dim=int(hidden), dropout=self.args.classifier_dropout,
        )

    def pool(self, features: Tensor, padding_mask: Optional[Tensor]) -> Tensor:
        if self.args.classifier_pooling == "first":
            return features[0]
        return masked_mean(features, padding_mask)

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, features_only: bool = False,
                classification_head_name: Optional[str] = None, **kwargs):
        """(logits of the named head, or the pooled B x C vector without one; the encoder's output dict)."""
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths)
        padding = encoder_out["encoder_padding_mask"]
        pooled = self.pool(encoder_out["encoder_out"][0], padding[0] if padding else None)
        if classification_head_name is not None:
            return self.classification_heads[classification_head_name](pooled), encoder_out
        return pooled, encoder_out

    def max_positions(self):
        return self.encoder.max_positions()


def localness_classifier_base(args) -> None:
    """Unset options: the classifier's defaults, fairseq's Transformer defaults, the methods' paper defaults."""
    if getattr(args, "classifier_pooling", None) is None:
        args.classifier_pooling = "mean"
    if getattr(args, "classifier_hidden_dim", None) is None:
        args.classifier_hidden_dim = 0
    base_architecture(args)
    if getattr(args, "classifier_dropout", None) is None:
        args.classifier_dropout = args.dropout
    localness_base_architecture(args)


#: Nguyen et al. (2020) Table 5 rows -> architecture suffix and locality options (method in layer 1 only, §5.3)
TABLE5_ROWS: Dict[str, Dict[str, Any]] = {
    "": {},  # Vaswani et al. (2017)
    "_relpos": {"locality_methods": "relpos", "relpos_layers": "1", "relpos_attention": "encoder"},  # Shaw et al.
    "_gaussian": {"locality_methods": "gaussian", "gaussian_layers": "1"},  # Yang et al. (2018)
    "_diffwin_mw": {"locality_methods": "diffwin_enc", "diffwin_enc_layers": "1", "diffwin_enc_mode": "mul"},
    "_diffwin_aw": {"locality_methods": "diffwin_enc", "diffwin_enc_layers": "1", "diffwin_enc_mode": "add"},
}

#: §5.3: 2 layers, 4 heads, d 128, FFN 512
TINY_SIZE = {"encoder_layers": 2, "encoder_attention_heads": 4, "encoder_embed_dim": 128, "encoder_ffn_embed_dim": 512}


def _register(name: str, defaults: Dict[str, Any]) -> None:
    """``name`` with ``defaults`` for unset options, on top of :func:`localness_classifier_base` (one size)."""
    register_locality_architectures(name, defaults, model=MODEL_NAME, sizes={"": localness_classifier_base})


_register(MODEL_NAME, {})  # fairseq's base size (6 layers, d 512), no locality method unless flags name one
for _suffix, _row in TABLE5_ROWS.items():
    _register(f"localness_classifier_tiny{_suffix}", {**TINY_SIZE, **_row})
