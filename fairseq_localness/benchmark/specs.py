"""Benchmark settings and architecture specs: ``ARCH@key=val`` parsing, references, and building a spec's model
arguments through :mod:`fairseq_localness.modelbuild`."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from typing import Dict, List, Optional, Tuple

from ..modelbuild import ModelOptionError, parse_model_args, synthetic_dictionary

# Sizes by name suffix: the reference of ``<name><suffix>`` is ``transformer<suffix>``.
# Longest first, so that "_wmt_en_de_big" wins over "_wmt_en_de".
SIZE_SUFFIXES = ("_wmt_en_de_big", "_iwslt_de_en", "_wmt_en_de")
BASELINE_FAMILY = "transformer"

# --quick: a tiny model and a few tiny steps, for smoke tests of the harness.
QUICK_SETTINGS = dict(
    steps=2, warmup=1, repeats=1, batch_tokens=256, vocab=512,
    beam=2, decode_batch=2, max_len=8, decode_iters=1,
)
QUICK_MODEL_OVERRIDES = {
    "encoder_embed_dim": "64", "decoder_embed_dim": "64",
    "encoder_ffn_embed_dim": "128", "decoder_ffn_embed_dim": "128",
    "encoder_attention_heads": "4", "decoder_attention_heads": "4",
}  # layer counts are kept: locality methods are often placed on specific layers
DEFAULT_SETTINGS = dict(
    steps=10, warmup=2, repeats=3, batch_tokens=4096, vocab=32000,
    beam=4, decode_batch=16, max_len=None, decode_iters=1,
)

JSON_KEYS = (
    "arch", "seq_len", "train_tokens_per_s", "peak_mem_mb",
    "train_ratio_vs_baseline", "decode_tokens_per_s", "decode_ratio_vs_baseline",
)


class BenchmarkError(Exception):
    """A user error: reported as one clear line, exit status 2."""


_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ARCH_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclasses.dataclass
class Spec:
    """One model to measure: a registered fairseq arch plus option overrides."""

    arch: str
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)
    role: str = "candidate"  # "baseline" | "extra_baseline" | "candidate"
    baseline: Optional[str] = None  # label of the reference spec

    @property
    def label(self) -> str:
        if not self.overrides:
            return self.arch
        return self.arch + "@" + ",".join(f"{k}={v}" for k, v in self.overrides.items())


def _override_value(value) -> str:
    """Normalise an override value to the string fairseq's parser would get."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if value is None:
        return "None"
    return json.dumps(value)


def _normalise_key(key: str, where: str) -> str:
    key = key.strip().lstrip("-")
    if not _KEY_RE.match(key):
        raise BenchmarkError(f"bad option name {key!r} in {where}")
    return key.replace("-", "_")


def parse_specs(text: str, option: str) -> List[Spec]:
    """Parse ``ARCH[@key=val,key=val][,ARCH...]``.

    Comma-separated tokens: a token with ``@`` starts an arch with its first
    override, a following ``key=val`` token adds an override to that arch, any
    other token is a new arch.
    """
    specs: List[Spec] = []
    can_continue = False
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            raise BenchmarkError(f"{option}: empty entry in {text!r}")
        if "@" in token:
            arch, _, first = token.partition("@")
            arch = arch.strip()
            if not arch or not _ARCH_RE.match(arch):
                raise BenchmarkError(f"{option}: bad architecture name {arch!r} in {token!r}")
            if "=" not in first:
                raise BenchmarkError(
                    f"{option}: expected ARCH@key=value, got {token!r}")
            spec = Spec(arch)
            key, _, val = first.partition("=")
            spec.overrides[_normalise_key(key, token)] = val.strip()
            specs.append(spec)
            can_continue = True
        elif "=" in token:
            if not can_continue:
                raise BenchmarkError(
                    f"{option}: {token!r} looks like an override but does not follow "
                    f"an ARCH@key=value entry (write ARCH@{token})")
            key, _, val = token.partition("=")
            specs[-1].overrides[_normalise_key(key, token)] = val.strip()
        else:
            if not _ARCH_RE.match(token):
                raise BenchmarkError(f"{option}: bad architecture name {token!r}")
            specs.append(Spec(token))
            can_continue = False
    return specs


def parse_seq_lens(text: str) -> List[int]:
    lens: List[int] = []
    for raw in text.split(","):
        tok = raw.strip()
        try:
            value = int(tok)
        except ValueError:
            raise BenchmarkError(
                f"--seq-lens: {tok!r} is not an integer (expected e.g. --seq-lens 64,256)")
        if value < 2:
            raise BenchmarkError(
                f"--seq-lens: {value} is too short; a sentence needs at least one "
                f"token plus EOS (>= 2)")
        if value not in lens:
            lens.append(value)
    return lens


def check_registered(specs: List[Spec], registry) -> None:
    names = sorted(registry)
    for spec in specs:
        if spec.arch in registry:
            continue
        close = difflib.get_close_matches(spec.arch, names, n=6, cutoff=0.6)
        close += [n for n in names if spec.arch in n and n not in close][: 6 - len(close)]
        hint = ("close matches: " + ", ".join(close)) if close else "no close matches"
        raise BenchmarkError(
            f"unknown architecture {spec.arch!r} ({hint}); "
            f"{len(names)} architectures are registered, see --list-archs")


def derive_baseline_arch(arch: str) -> str:
    """The plain fairseq transformer of the same size as ``arch``."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY

    fn = ARCH_CONFIG_REGISTRY.get(arch)
    if (ARCH_MODEL_NAME_REGISTRY.get(arch) == BASELINE_FAMILY and fn is not None
            and fn.__module__.startswith("fairseq.")):
        return arch  # a stock fairseq transformer size is its own reference
    for suffix in SIZE_SUFFIXES:
        if arch.endswith(suffix):
            return BASELINE_FAMILY + suffix
    return BASELINE_FAMILY


def _quiet_fairseq() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("fairseq", "hydra", "fairseq_localness"):
        logging.getLogger(name).setLevel(logging.WARNING)


def fairseq_args(spec: Spec, settings: dict):
    """Parse fairseq-train arguments for ``spec``; return (args Namespace, cfg).

    Precedence, lowest first: --quick tiny-model settings and
    --[no-]share-all-embeddings (both skipped where an architecture lacks the
    option), --model-overrides, ARCH@key=val. Unknown option names are an error.
    """
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    lenient = dict(settings["harness_overrides"])
    lenient["share_all_embeddings"] = _override_value(settings["share_all_embeddings"])
    extra = ["--criterion", settings["criterion"], "--optimizer", "adam", "--seed", str(settings["seed"])]
    if settings["criterion"] == "label_smoothed_cross_entropy":
        extra += ["--label-smoothing", str(settings["label_smoothing"])]
    try:
        args = parse_model_args(spec.arch, extra, overrides={**settings["global_overrides"], **spec.overrides},
                                lenient_overrides=lenient, label=spec.label)
    except ModelOptionError as exc:
        raise BenchmarkError(str(exc)) from None
    return args, convert_namespace_to_omegaconf(args)


def max_positions(cfg) -> Tuple[int, int]:
    def get(name):
        for group in (cfg.model, cfg.task):
            value = getattr(group, name, None)
            if value is not None:
                return int(value)
        return 1024

    return get("max_source_positions"), get("max_target_positions")


def model_size(cfg) -> dict:
    m = cfg.model
    keys = ("encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers",
            "encoder_attention_heads", "decoder_embed_dim", "decoder_layers",
            "decoder_attention_heads")
    return {k: getattr(m, k, None) for k in keys}


def make_dictionary(size: int):
    """A joint synthetic dictionary of ``size`` entries, specials included."""
    from fairseq.data import Dictionary

    nspecial = Dictionary().nspecial
    if size <= nspecial:
        raise BenchmarkError(f"--vocab must exceed the {nspecial} special symbols")
    return synthetic_dictionary(size - nspecial)
