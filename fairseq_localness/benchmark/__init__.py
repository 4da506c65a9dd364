"""Speed and memory benchmark for fairseq translation architectures.

For every architecture in ``--archs`` and every length in ``--seq-lens`` this
script builds the model the way ``fairseq-train`` does (fairseq's own argument
parser, the ``translation`` task, a synthetic joint dictionary), then measures

* training throughput: forward + backward + Adam step on identical random
  batches, in target tokens per second (fairseq's ``wps`` convention);
* peak memory of model build + training (see "Memory" below);
* incremental-decoding throughput: fairseq's ``SequenceGenerator`` (beam
  search) with EOS forbidden until a fixed length, so every architecture
  generates exactly the same number of tokens;

and reports each figure together with its ratio to the plain fairseq
``transformer`` of the same size, measured in the same run.  The reference for
``<name>``, ``<name>_iwslt_de_en``, ``<name>_wmt_en_de`` and
``<name>_wmt_en_de_big`` is ``transformer``, ``transformer_iwslt_de_en``,
``transformer_wmt_en_de`` and ``transformer_wmt_en_de_big``; a plain fairseq
``transformer*`` architecture is its own reference; ``--baseline`` overrides.

Every measurement (one architecture at one length in one repeat) runs in a
fresh subprocess, so that memory figures are not polluted by other models or
by the allocator caches they leave behind.  Architectures are run round-robin
within each repeat (with the start rotated from repeat to repeat) so that
machine drift hits all of them alike; the reported figures are medians over
the repeats.

Memory ("peak_mem_mb"):
* CUDA: ``torch.cuda.max_memory_allocated()`` over model build + training
  steps: parameters, gradients, Adam state and activations (tensor memory,
  without the caching allocator's reserve).
* CPU: the increase of the worker's peak resident set size (Linux VmHWM,
  reset through /proc/self/clear_refs) over its resident size just before the
  model is built: the same tensors plus allocator overhead and per-thread
  scratch buffers.

Architecture specs may carry fairseq option overrides:
``ARCH@key=val,key=val`` (keys are fairseq option names, dashes or
underscores), e.g. ``--archs transformer_gaussian_local,transformer@encoder_layers=9``.

Usage (``scripts/benchmark.py`` and ``fairseq-localness-benchmark`` are the same command):
    python scripts/benchmark.py --archs transformer_gaussian_local_iwslt_de_en \\
        --seq-lens 64,256 --json runs/bench.json
"""
