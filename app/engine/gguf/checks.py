"""What llama.cpp refuses, or aborts on, that a GGUF header already shows.

llama.cpp validates some of a file (an unknown tensor type, a tensor offset out of place: gguf.cpp; an unknown
architecture or a missing tensor: llama-model-loader.cpp and llama-model.cpp) and refuses to load it; other things
it does not validate and it kills the process with GGML_ASSERT instead (two tokens with the same text:
llama-vocab.cpp's load; add-BOS without a BOS token: its tokenizer). gguf_info calls these checks so that a file
is called usable only when llama.cpp will load it and tokenize with it.

The tables below are read from the llama.cpp that llama-cpp-python 0.3.36 vendors (ggml.h's ggml_type,
llama-arch.cpp's LLM_ARCH_NAMES, llama-vocab.cpp's pre-tokenizer names). They are ours, not the gguf package's,
because the gguf package on PyPI follows llama.cpp's master, not the version we run.
"""

from __future__ import annotations

import struct
from typing import Iterable, Optional, Sequence

# ggml_type id -> (block size, bytes per block), for the types this llama.cpp can read; ids missing here
# (4, 5, 31-33, 36-38 were removed; 43 and up do not exist yet) are refused by gguf.cpp.
_QK_K = 256
GGML_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 2 + 2 + _QK_K // 16 + _QK_K // 4),
    11: (256, 2 + _QK_K // 4 + _QK_K // 8 + 12),
    12: (256, 2 + 2 + _QK_K // 2 + 12),
    13: (256, 2 + 2 + _QK_K // 2 + _QK_K // 8 + 12),
    14: (256, 2 + _QK_K // 2 + _QK_K // 4 + _QK_K // 16),
    15: (256, 4 + _QK_K + _QK_K // 8),
    16: (256, 2 + _QK_K // 4),
    17: (256, 2 + _QK_K // 4 + _QK_K // 32),
    18: (256, 2 + _QK_K // 4 + _QK_K // 8),
    19: (256, 2 + _QK_K // 8 + _QK_K // 16),
    20: (32, 18),
    21: (256, 2 + _QK_K // 4 + _QK_K // 8 + _QK_K // 32 + 4),
    22: (256, 2 + _QK_K // 4 + _QK_K // 16),
    23: (256, 2 + 2 + _QK_K // 2 + _QK_K // 64),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, _QK_K // 8 + _QK_K // 16 + _QK_K // 32),
    30: (1, 2),
    34: (256, 2 + 4 * 13),
    35: (256, 2 + 64),
    39: (32, 17),
    40: (64, 36),
    41: (128, 18),
    42: (64, 18),
}
GGML_MAX_NAME = 64  # a tensor name must be shorter than this (ggml.h)

# Architectures llama.cpp can build a model for ("clip" is known to it but only as a vision projector).
KNOWN_ARCHITECTURES = frozenset(
    """
llama llama4 deci falcon grok gpt2 gptj gptneox mpt baichuan starcoder refact bert modern-bert nomic-bert
nomic-bert-moe neo-bert jina-bert-v2 jina-bert-v3 eurobert bloom stablelm qwen qwen2 qwen2moe qwen2vl qwen3 qwen3moe
qwen3next qwen3vl qwen3vlmoe qwen35 qwen35moe qwen4exp phi2 phi3 phimoe plamo plamo2 plamo3 codeshell orion internlm2
minicpm minicpm3 gemma gemma2 gemma3 gemma3n gemma4 gemma4-assistant gemma-embedding starcoder2 mamba mamba2 maple
jamba falcon-h1 xverse command-r cohere2 cohere2moe dbrx olmo olmo2 olmoe muse-glimmer openelm arctic deepseek
deepseek2 deepseek2-ocr deepseek32 deepseek4 chatglm glm4 glm4moe glm-dsa bitnet t5 t5encoder jais jais2 nemotron
nemotron_h nemotron_h_moe exaone exaone4 exaone-moe rwkv6 rwkv6qwen2 rwkv7 arwkv7 granite granitemoe granitehybrid
graniteswitch granite_swa chameleon wavtokenizer-dec plm bailingmoe bailingmoe2 bailingmoe3 dots1 dots3note arcee
afmoe laguna ernie4_5 ernie4_5-moe hunyuan-moe hunyuan-dense hunyuan_vl hy_v3 hy_v4 smollm3 gpt-oss lfm2 lfm2moe
dream smallthinker llada llada-moe seed_oss grovemoe apertus minimax-01 hrm_text minimax-m2 minimax-m3 cogvlm rnd1
pangu-embedded mistral3 eagle3 dflash mistral4 paddleocr mimo2 step35 spark2_5 llama-embed maincoder kimi-linear
kimi-k3 glm5-next talkie mellum nanbeige qwen3tts pockettts
""".split()
)

# tokenizer.ggml.pre values llama.cpp knows for a BPE vocabulary; "" (absent) means "default".
KNOWN_BPE_PRE = frozenset(
    """
default a.x-4.0 afmoe bailingmoe bailingmoe2 bloom chameleon chatglm-bpe codeshell cohere2moe command-r dbrx
deepseek-coder deepseek-llm deepseek-r1-qwen deepseek-v3 exaone exaone-moe exaone4 f2llmv2 falcon falcon-h1 falcon3
gemma4 gigachat glm4 glm5 gpt-2 gpt-4o gpt3-finnish granite-docling granite-embed-multi-311m granite-embed-multi-97m
grok-2 hunyuan hunyuan-dense hy_v4 jais jais-2 jina-de jina-es jina-v1-en jina-v2-code jina-v2-de jina-v2-es
jina-v5-nano joyai-llm kanana2 kimi-k2 kormo laguna lfm2 llada-moe llama-bpe llama-v3 llama3 llama4 megrez mellum
mellum2 midm-2.0 minerva-7b minicpm5 minimax-m2 modern-bert mpt olmo phi-2 pixtral poro-chat qwen2 qwen35 refact
roberta-bpe sarvam-moe seed-coder smaug-bpe smollm solar-open spark2_5 stablelm2 starcoder superbpe talkie tekken
tiny_aya trillion ufakzeka viking whitespace youtu
""".split()
)

# Architectures built as a llama-style decoder: every layer has these tensors (llama-model.cpp's load_tensors).
_DECODER_LAYER_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output")
_DECODER_ARCHITECTURES = frozenset({"llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3"})

_U64 = struct.Struct("<Q")

Tensor = tuple[str, tuple[int, ...], int, int]  # name, dims, ggml type, offset within the data section


def architecture_problem(architecture: str) -> str:
    if architecture == "clip":
        return "a vision projector (clip), not a language model: llama.cpp loads it only beside one"
    if architecture and architecture not in KNOWN_ARCHITECTURES:
        return f"architecture '{architecture}' is unknown to this llama.cpp"
    return ""


def pre_tokenizer_problem(vocab_type: str, pre: Optional[str]) -> str:
    if vocab_type == "BPE" and pre and pre not in KNOWN_BPE_PRE:
        return f"pre-tokenizer '{pre}' is unknown to this llama.cpp"
    return ""


def special_token_problems(
    vocab_type: str, add_bos: bool, bos_id: Optional[int], add_eos: bool, eos_id: Optional[int], sep_id: Optional[int]
) -> list[str]:
    """llama.cpp's tokenizer asserts (and aborts) when it must add a special token the vocabulary does not have."""
    problems = []
    if vocab_type == "WPM":
        # WordPiece always adds BOS ([CLS]) and SEP.
        if bos_id is None:
            problems.append("the tokenizer must add a BOS token but the vocabulary has none")
        if sep_id is None:
            problems.append("the tokenizer must add a SEP token but the vocabulary has none")
    elif vocab_type in ("SPM", "BPE", "UGM"):
        if add_bos and bos_id is None:
            problems.append("tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token")
        if add_eos and eos_id is None:
            problems.append("tokenizer.ggml.add_eos_token is set but the vocabulary has no EOS token")
    return problems


def duplicate_token(buf, start: int, count: int) -> Optional[tuple[int, int, bytes]]:
    """(first id, second id, text) of the first two tokens llama.cpp would read as the same text, else None.

    llama.cpp keys its text -> id map by the text up to the first NUL byte and names an empty text "[EMPTY_<id>]";
    two equal keys make its load abort.
    """
    texts: list[bytes] = []
    append, unpack, pos = texts.append, _U64.unpack_from, start
    for _ in range(count):
        length = unpack(buf, pos)[0]
        pos += 8
        append(buf[pos : pos + length])
        pos += length
    distinct = set(texts)
    if len(distinct) == count and b"" not in distinct and b"\0" not in b"".join(texts):
        return None  # the common case, decided in C
    seen: dict[bytes, int] = {}
    for i, text in enumerate(texts):
        text = text.split(b"\0", 1)[0] or f"[EMPTY_{i}]".encode()
        first = seen.setdefault(text, i)
        if first != i:
            return first, i, text
    return None


def tensor_problems(tensors: Sequence[Tensor], alignment: int) -> list[str]:
    """gguf.cpp's checks of the tensor infos: names, types, shapes and each tensor's offset in the data section."""
    if not tensors:
        return ["the file holds no tensors (no weights)"]
    problems: list[str] = []
    seen: set[str] = set()
    expected = 0
    for name, dims, ggml_type, offset in tensors:
        if name in seen:
            problems.append(f"tensor '{name}' appears twice")
            break
        seen.add(name)
        if len(name.encode("utf-8")) >= GGML_MAX_NAME:
            problems.append(f"tensor name '{name[:40]}…' is longer than llama.cpp allows ({GGML_MAX_NAME - 1})")
            break
        sizes = GGML_TYPE_SIZES.get(ggml_type)
        if sizes is None:
            problems.append(f"tensor '{name}' has tensor type {ggml_type}, which this llama.cpp does not know")
            break
        block, block_bytes = sizes
        if dims and dims[0] % block:
            problems.append(
                f"tensor '{name}' has rows of {dims[0]} values, not a multiple of its type's block ({block})"
            )
            break
        if offset != expected:
            problems.append(f"tensor '{name}' data is misplaced (offset {offset}, llama.cpp expects {expected})")
            break
        elements = 1
        for dim in dims:
            elements *= dim
        expected += -(-(elements // block * block_bytes) // alignment) * alignment
    return problems


def missing_tensor_problems(architecture: str, names: Iterable[str], n_layer: Optional[int]) -> list[str]:
    """Tensors every model of the architecture needs, which llama.cpp refuses to load without."""
    names = set(names)
    if not names:
        return []
    missing = [] if "token_embd.weight" in names else ["token_embd.weight"]
    if architecture in _DECODER_ARCHITECTURES:
        if "output_norm.weight" not in names:
            missing.append("output_norm.weight")
        for layer in range(n_layer or 0):
            missing.extend(
                f"blk.{layer}.{part}.weight"
                for part in _DECODER_LAYER_TENSORS
                if f"blk.{layer}.{part}.weight" not in names
            )
    if not missing:
        return []
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return [f"missing tensor{'s' if len(missing) > 1 else ''} {shown}"]
