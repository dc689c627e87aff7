"""What the bundle's self-test and the screenshot script need at run time: tiny models written on the spot.

- synthetic.py: Tiny GGUF models written on the spot, so tests, the bundle self-test and benchmarks run offline in seconds.
- vocab.py: The tiny models' vocabularies: byte-level BPE with ChatML's specials, or SentencePiece, each from a VocabSpec.
- synthetic_vision.py: A tiny vision model (synthetic.py's target plus a tiny LLaVA-style `mlp` mmproj) and a draft for it.
- shaped.py: Synthetic models of real shapes (1.5B-, 7B-class targets, a draft that agrees by construction), for the GPU check.
- bert_gguf.py: Writing a BERT embedding model in llama.cpp's GGUF layout, for the tiny models and the real all-MiniLM.
- synthetic_embedding.py: A tiny BERT embedding model (and reranker) with a WordPiece vocabulary, for the embedding tests.
"""
