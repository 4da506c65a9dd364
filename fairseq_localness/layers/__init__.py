"""The Transformer layers the architectures build: fairseq's layers with LocalityAttention (:mod:`.localness`) and the
MAN layers with their extra sub-layer (:mod:`.man`). Nothing here imports the architectures."""
