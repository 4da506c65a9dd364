"""Which kernel runs an attention block's score -> softmax -> weighted sum, and the FlexAttention one.

Three backends (``--locality-attention-backend``, Hydra ``model.locality_attention_backend``):

* ``eager``: the explicit softmax (logits, softmax, ``probs @ v``); the only one that returns probabilities;
* ``sdpa``: ``scaled_dot_product_attention`` with the summed float bias (B, H, T, S);
* ``flex``: ``flex_attention`` with the methods' ``score_mod``s and a block mask (:mod:`.fusion`): no dense bias.

``auto`` (the default) takes ``flex`` on CUDA where every method of the block declares a Flex form, and ``sdpa``
elsewhere; any backend falls back to ``eager`` where probabilities are needed. :func:`choose_backend` holds the
rules, so that the attention core (:mod:`.core`) only gathers the facts of a call; :class:`FlexCall` runs one.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .fusion import Band, FlexTerms, ScoreMod
from .options import read_option

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "eager", "sdpa", "flex")
#: flags ``--locality-attention-<option>`` (Hydra ``model.locality_attention_<option>``)
BACKEND_PREFIX = "locality_attention"
#: FlexAttention's block size (queries x keys): block masks are built at lengths rounded up to it
FLEX_BLOCK = 128
#: recompilations allowed for the one compiled flex_attention: one per score_mod and placement of a model
FLEX_RECOMPILE_LIMIT = 64


@dataclass(frozen=True)
class BackendOptions:
    """The attention backend of every ``LocalityAttention`` block of a model."""

    backend: str = field(
        default="auto",
        metadata={"help": "kernel of the locality attention blocks: auto (flex on CUDA where every method of the block "
                  "has a FlexAttention form, sdpa elsewhere), eager (explicit softmax), sdpa "
                  "(scaled_dot_product_attention with the summed float bias) or flex (flex_attention, falling back "
                  "where it cannot serve); probabilities (need_weights, post-softmax methods) always use eager",
                  "choices": BACKENDS, "metavar": "NAME"},
    )


def read_backend(args: Any) -> str:
    """``--locality-attention-backend`` from an argparse namespace or config (its default when unset)."""
    return read_option(args, BACKEND_PREFIX, BackendOptions, "backend")


# ---- the choice ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallFacts:
    """What the choice of a backend depends on, for one call of one attention block."""

    requested: str  # one of BACKENDS
    device: str  # "cuda", "cpu", ...
    need_probs: bool = False  # need_weights, or a method reads/changes probabilities
    unfusable: Optional[str] = None  # why a method of the block has no Flex form (first one), else None
    own_kernel: Optional[str] = None  # why a method's attention_kernel must run (explicit choice, no bias form)
    dropout: bool = False  # attention dropout is active (training)
    grad_on_cpu: bool = False  # gradients are needed on a CPU (Flex has no CPU backward)
    incremental: bool = False  # one decoding step
    other_mask: bool = False  # an attn_mask that is not the decoder's future mask
    capture: bool = False  # analyses record the methods' dense values
    flex_missing: bool = False  # this torch has no torch.nn.attention.flex_attention
    training_fallback: Optional[str] = None  # gradients are needed and a method trains on sdpa (why)


def choose_backend(facts: CallFacts) -> Tuple[str, str]:
    """(backend, reason): ``eager``, ``sdpa`` or ``flex`` for one call, and why.

    Flex serves inference and training on CUDA, inference on the CPU. It is not used where it cannot run the
    call as the reference does: probabilities asked for, a method without a Flex form, attention dropout (Flex
    has none), gradients on the CPU, an attention mask other than the causal one, analysis capture; nor, under
    ``auto``, for gradients through a method that declares a training fallback (a Flex backward unverified or
    measured slower), nor for incremental decoding (one query per step, where Flex's block machinery has little
    to skip; an explicit ``flex`` decodes through it, so that a GPU measurement can decide).
    """
    if facts.requested not in BACKENDS:
        raise ValueError(f"--locality-attention-backend: {facts.requested!r} is not one of {', '.join(BACKENDS)}")
    if facts.need_probs:
        return "eager", "attention probabilities are needed"
    if facts.requested in ("eager", "sdpa"):
        return facts.requested, "requested"
    fallback = "sdpa"
    if facts.own_kernel:
        return fallback, facts.own_kernel
    if facts.requested == "auto" and facts.device != "cuda":
        return fallback, f"auto on {facts.device} (Flex is used on CUDA)"
    for blocked, reason in (
        (facts.flex_missing, "this torch has no FlexAttention"),
        (facts.unfusable, facts.unfusable),
        (facts.dropout, "attention dropout is active (Flex has no dropout)"),
        (facts.grad_on_cpu, "gradients are needed on the CPU (Flex has no CPU backward)"),
        (facts.other_mask, "an attention mask other than the causal one"),
        (facts.capture, "analysis capture records dense values"),
    ):
        if blocked:
            return fallback, str(reason)
    if facts.requested == "auto" and facts.training_fallback:
        return fallback, facts.training_fallback
    if facts.requested == "auto" and facts.incremental:
        return fallback, "incremental decoding under auto (one query per step; --locality-attention-backend flex decodes through Flex)"
    return "flex", "every method has a Flex form" if facts.requested == "auto" else "requested"


_LOGGED: set = set()


def log_choice_once(where: str, methods: Sequence[str], backend: str, reason: str) -> None:
    """Log which backend a set of methods uses, once per (methods, attention type, backend, reason)."""
    key = (tuple(methods), where, backend, reason)
    if key not in _LOGGED:
        _LOGGED.add(key)
        logger.info("attention backend for %s (%s attention): %s, %s", ",".join(methods), where, backend, reason)


# ---- FlexAttention ---------------------------------------------------------------------------------------------


def flex_available() -> bool:
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


_COMPILED: Dict[str, Callable] = {}


def flex_kernel(device: torch.device) -> Callable:
    """``flex_attention``, compiled on CUDA (the fused Triton kernel) and eager elsewhere.

    On the CPU the eager form evaluates the score_mod over the dense (T, S) scores (inference only); compiling it
    costs about 25 s per score_mod (measured with torch 2.13 on this project's CPU machines) and fails on a
    second sequence length (inductor's CPU template, dynamic shapes), so the CPU uses it eager.
    """
    from torch.nn.attention.flex_attention import flex_attention

    if device.type != "cuda":
        return flex_attention
    if "cuda" not in _COMPILED:
        # dynamic from the first call: training batches change length at every step
        compiled = torch.compile(flex_attention, dynamic=True)
        config = flex_compile_config()

        def kernel(*args, **kwargs):
            with torch._dynamo.config.patch(**config):
                return compiled(*args, **kwargs)

        _COMPILED["cuda"] = kernel
    return _COMPILED["cuda"]


def flex_compile_config() -> Dict[str, Any]:
    """dynamo settings for the compiled ``flex_attention`` (measured on an H200 with torch 2.11, docs/gpu.md).

    * ``specialize_float``: the softmax scale and the floats the score_mods capture (floors, fixed widths) are
      constants of a model. Left symbolic, dynamo wraps them as 0-dim float64 tensors, and the kernel's fake
      tensor pass then fails ("Pending unbacked symbols ... not in returned outputs"), after which dynamo traces
      into flex's autograd function and stops with "all unwrapped values must be FakeTensor".
    * ``recompile_limit``: every distinct score_mod (one per method and placement) is a recompilation of this
      one function; past dynamo's default of 8 it runs flex eagerly, which on CUDA is the dense reference
      implementation (the first GPU run reached that path, and DMAN at 1,024 tokens ran out of its index range).
    """
    import torch._dynamo.config as dynamo

    config: Dict[str, Any] = {"specialize_float": True}
    limit = "recompile_limit" if hasattr(dynamo, "recompile_limit") else "cache_size_limit"
    config[limit] = max(getattr(dynamo, limit), FLEX_RECOMPILE_LIMIT)
    return config


def _band_mask_mod(band: Band, offset: int = 0):
    """mask_mod of a band; ``offset`` = S - T (queries are the last T keys)."""
    left, right = band.left, band.right

    def band_mask(b, h, q_idx, kv_idx):
        query = q_idx + offset
        allowed = kv_idx >= 0  # all True, with the right shape and dtype
        if left is not None:
            allowed = allowed & (kv_idx >= query - left)
        if right is not None:
            allowed = allowed & (kv_idx <= query + right)
        return allowed

    return band_mask


def _bucket(length: int) -> int:
    return -(-length // FLEX_BLOCK) * FLEX_BLOCK


class BlockMaskCache:
    """Block masks of bands, built once per (band, length bucket, device) and cropped to each call's lengths.

    ``create_block_mask`` evaluates the mask over every (query, key) pair; a band depends on the lengths only,
    so the mask of a bucket (lengths rounded up to a multiple of the block size) serves every shorter call,
    cropped by ``BlockMask._adjust`` (a band anchored at the upper-left corner crops exactly). Self-attention
    only (T = S): cross attention has no band.
    """

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._buckets: "OrderedDict[tuple, Any]" = OrderedDict()
        self._cropped: "OrderedDict[tuple, Any]" = OrderedDict()
        self.built = 0  # create_block_mask calls, for the tests

    def _remember(self, store: OrderedDict, key: tuple, value: Any) -> Any:
        store[key] = value
        store.move_to_end(key)
        while len(store) > self.max_entries:
            store.popitem(last=False)
        return value

    def get(self, band: Band, length: int, device: torch.device):
        from torch.nn.attention.flex_attention import create_block_mask

        key = (band, length, str(device))
        if key in self._cropped:
            self._cropped.move_to_end(key)
            return self._cropped[key]
        bucket = _bucket(length)
        bucket_key = (band, bucket, str(device))
        mask = self._buckets.get(bucket_key)
        if mask is None:
            self.built += 1
            mask = create_block_mask(_band_mask_mod(band), None, None, bucket, bucket, device=device,
                                     BLOCK_SIZE=FLEX_BLOCK)
            self._remember(self._buckets, bucket_key, mask)
        if bucket != length:
            mask = crop_block_mask(mask, length)
        return self._remember(self._cropped, key, mask)


def crop_block_mask(mask, length: int):
    """The upper-left ``length`` x ``length`` corner of a block mask, declared as that length.

    ``BlockMask._adjust`` crops the block tables, but before torch 2.13 it kept the original lengths, which
    ``flex_attention`` then refuses for a shorter call ("block_mask was created for ... but got q_len=...";
    seen with torch 2.11 on CUDA). Rebuilding from the cropped tables with explicit lengths works on both.
    """
    from torch.nn.attention.flex_attention import BlockMask

    cropped = mask._adjust(length, length)
    return BlockMask.from_kv_blocks(cropped.kv_num_blocks, cropped.kv_indices, cropped.full_kv_num_blocks,
                                    cropped.full_kv_indices, BLOCK_SIZE=cropped.BLOCK_SIZE,
                                    mask_mod=cropped.mask_mod, seq_lengths=(length, length))


BLOCK_MASKS = BlockMaskCache()


def window_block_mask(lowest: Tensor, highest: Tensor, src_len: int, band: Optional[Band]):
    """A per-call block mask from key windows: (B, H, T) lowest and highest buffer key index of every query.

    A key block is kept for a query block where some query of it may see some key of it; there are no "full"
    blocks, so the mask_mod (the band's, if any; the exact window is the score_mod's) runs on every kept block.
    """
    from torch.nn.attention.flex_attention import BlockMask

    batch, heads, tgt_len = lowest.shape
    rows = -(-tgt_len // FLEX_BLOCK)
    cols = -(-src_len // FLEX_BLOCK)
    pad = rows * FLEX_BLOCK - tgt_len
    lo = torch.nn.functional.pad(lowest, (0, pad), value=src_len).view(batch, heads, rows, FLEX_BLOCK)
    hi = torch.nn.functional.pad(highest, (0, pad), value=-1).view(batch, heads, rows, FLEX_BLOCK)
    first = lo.amin(dim=-1).clamp(0, src_len - 1) // FLEX_BLOCK  # (B, H, rows)
    last = hi.amax(dim=-1).clamp(-1, src_len - 1)
    last = torch.where(last < 0, first - 1, last // FLEX_BLOCK)
    count = (last - first + 1).clamp_min(0)
    indices = (first.unsqueeze(-1) + torch.arange(cols, device=lowest.device)).clamp_max(cols - 1)
    mask_mod = _band_mask_mod(band, src_len - tgt_len) if band is not None and not band.unbounded else None
    kwargs = {"mask_mod": mask_mod} if mask_mod is not None else {}
    return BlockMask.from_kv_blocks(count.to(torch.int32), indices.to(torch.int32), BLOCK_SIZE=FLEX_BLOCK,
                                    seq_lengths=(tgt_len, src_len), **kwargs)


def compose(score_mods: Sequence[ScoreMod]) -> Optional[ScoreMod]:
    """One score_mod applying each of ``score_mods`` in turn (None for none)."""
    mods = tuple(score_mods)
    if not mods:
        return None

    def score_mod(score, b, h, q_idx, kv_idx):
        for mod in mods:
            score = mod(score, b, h, q_idx, kv_idx)
        return score

    return score_mod


def padding_score_mod(key_valid: Tensor) -> ScoreMod:
    """Padding keys get -inf (fairseq's key_padding_mask)."""

    def padding(score, b, h, q_idx, kv_idx):
        return torch.where(key_valid[b, kv_idx], score, float("-inf"))

    return padding


class FlexCall:
    """One attention call through ``flex_attention``: the block's terms gathered once, attended once or more.

    ``terms`` are the methods' :class:`FlexTerms`; ``causal`` adds the decoder's future mask as a band.
    ``attend(extra)`` runs the attention, with ``extra`` terms on top (the hybrid's local pattern).
    """

    def __init__(self, q: Tensor, k: Tensor, v: Tensor, scaling: float, terms: Sequence[FlexTerms],
                 key_valid: Optional[Tensor], causal: bool, cache: BlockMaskCache = BLOCK_MASKS):
        self.q, self.k, self.v, self.scaling, self.cache = q, k, v, scaling, cache
        self.terms: List[FlexTerms] = [t for t in terms if t is not None]
        if causal:
            self.terms.append(FlexTerms(band=Band(left=None, right=0)))
        if key_valid is not None:
            self.terms.append(FlexTerms(score_mod=padding_score_mod(key_valid)))
        self.key_valid = key_valid

    @property
    def key_offset(self) -> Optional[Tensor]:
        """(B,) buffer index of each sentence's first real key (padding sits at one end), None without padding."""
        if self.key_valid is None:
            return None
        return self.key_valid.to(torch.uint8).argmax(dim=1)  # the first True

    def block_mask(self, terms: Sequence[FlexTerms]):
        band = Band()
        for term in terms:
            if term.band is not None:
                band = band & term.band
        windows = [t.key_window for t in terms if t.key_window is not None]
        tgt_len, src_len = self.q.size(2), self.k.size(2)
        if not windows and band.unbounded:
            return None
        if not windows and tgt_len == src_len:
            return self.cache.get(band, src_len, self.q.device)
        if windows:
            offset = self.key_offset.view(-1, 1, 1) if self.key_offset is not None else 0
            lowest = torch.stack([w[0] for w in windows]).amax(dim=0).floor()
            highest = torch.stack([w[1] for w in windows]).amin(dim=0).ceil()
            lowest, highest = (lowest + offset).long(), (highest + offset).long()
        else:
            # decoding steps (the queries are the last T of S keys): the band's key range per query, one row
            # shared by every sentence and head, instead of a create_block_mask over (T, S) at every step
            lowest = torch.zeros(1, 1, tgt_len, dtype=torch.long, device=self.q.device)
            highest = torch.full_like(lowest, src_len - 1)
        if not band.unbounded:  # the band's limits narrow the windows
            query = torch.arange(tgt_len, device=self.q.device) + (src_len - tgt_len)  # buffer index of each query
            if band.left is not None:
                lowest = torch.maximum(lowest, query - band.left)
            if band.right is not None:
                highest = torch.minimum(highest, query + band.right)
        return window_block_mask(lowest, highest, src_len, band)

    def attend(self, extra: Optional[FlexTerms] = None) -> Tensor:
        terms = self.terms + ([extra] if extra is not None else [])
        score_mod = compose([t.score_mod for t in terms if t.score_mod is not None])
        kernel = flex_kernel(self.q.device)
        return kernel(self.q, self.k, self.v, score_mod=score_mod, block_mask=self.block_mask(terms), scale=self.scaling)
