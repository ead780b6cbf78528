"""A tiny Llama built here, the same bytes every time: seeded weights and a byte-level BPE tokenizer trained locally.

    python -m tools.real_engine.model DEST   build into DEST and print each file's sha256 (JSON)

No hub and no download: the weights are drawn from a seeded `torch.Generator` and written as safetensors by hand
(a JSON header, then the raw little-endian tensors, in name order), the config is LlamaForCausalLM's, and the
tokenizer is trained with `tokenizers` on a seeded corpus. The CPU attention backend wants a head size of at least
32, hence 128 hidden over 4 heads. The weights need torch alone; the tokenizer needs `tokenizers`, which only the
engine's environments hold.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

SEED = 20260916  # the day the fix was merged
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2
WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class TinyLlama:
    """The sizes of the model (LlamaForCausalLM's config names)."""

    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    vocab_size: int = 1000
    max_position_embeddings: int = 256

    def config(self) -> dict[str, object]:
        """config.json: a Llama with untied embeddings, float32 (the CPU runs it as it is)."""
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            **asdict(self),
            "num_key_value_heads": self.num_attention_heads,
            "head_dim": self.hidden_size // self.num_attention_heads,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0,
            "tie_word_embeddings": False,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "torch_dtype": "float32",
        }

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight's name and shape, as vLLM's and transformers' Llama name them."""
        hidden, inner, vocab = self.hidden_size, self.intermediate_size, self.vocab_size
        shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, hidden)}
        for i in range(self.num_hidden_layers):
            layer = f"model.layers.{i}"
            for proj in ("q", "k", "v", "o"):
                shapes[f"{layer}.self_attn.{proj}_proj.weight"] = (hidden, hidden)
            shapes[f"{layer}.mlp.gate_proj.weight"] = (inner, hidden)
            shapes[f"{layer}.mlp.up_proj.weight"] = (inner, hidden)
            shapes[f"{layer}.mlp.down_proj.weight"] = (hidden, inner)
            shapes[f"{layer}.input_layernorm.weight"] = (hidden,)
            shapes[f"{layer}.post_attention_layernorm.weight"] = (hidden,)
        shapes["model.norm.weight"] = (hidden,)
        shapes["lm_head.weight"] = (vocab, hidden)
        return shapes


def safetensors_bytes(tensors: dict[str, bytes], shapes: dict[str, tuple[int, ...]]) -> bytes:
    """A safetensors file of float32 tensors (their raw bytes), in name order, its header padded to 8 bytes."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in sorted(tensors):
        size = len(tensors[name])
        header[name] = {"dtype": "F32", "shape": list(shapes[name]), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(tensors[name] for name in sorted(tensors))


def write_weights(dest: Path, sizes: TinyLlama = TinyLlama(), seed: int = SEED) -> None:
    """config.json, generation_config.json and the seeded weights (normal, std 0.02; norms at one)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in sizes.shapes().items():  # drawn in the shapes' order, which is fixed
        if name.endswith("norm.weight"):
            tensor = torch.ones(shape, dtype=torch.float32)
        else:
            tensor = torch.normal(0.0, 0.02, shape, generator=generator, dtype=torch.float32)
        tensors[name] = tensor.numpy().astype("<f4").tobytes()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / WEIGHTS).write_bytes(safetensors_bytes(tensors, sizes.shapes()))
    _write_json(dest / "config.json", sizes.config())
    _write_json(dest / "generation_config.json", {"bos_token_id": 1, "eos_token_id": 2})


def corpus(seed: int = SEED, lines: int = 3000) -> list[str]:
    """Sentences of made-up words, the same for the same seed: enough distinct pairs for 1,000 tokens."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(1500)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + "." for _ in range(lines)]


def write_tokenizer(dest: Path, vocab_size: int = TinyLlama.vocab_size, seed: int = SEED) -> None:
    """tokenizer.json (byte-level BPE trained on `corpus`) and a tokenizer_config.json naming its special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(seed), trainer)
    dest.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(dest / "tokenizer.json"))
    unk, bos, eos = SPECIAL_TOKENS
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos, "eos_token": eos, "unk_token": unk}
    _write_json(dest / "tokenizer_config.json", {**settings, "model_max_length": TinyLlama.max_position_embeddings})


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file of a model folder, by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def build(dest: Path, seed: int = SEED) -> dict[str, str]:
    """The whole model in `dest` (weights, config, tokenizer); its files' digests."""
    write_weights(dest, seed=seed)
    write_tokenizer(dest, seed=seed)
    return digests(dest)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tools.real_engine.model DEST")
    print(json.dumps(build(Path(sys.argv[1])), indent=2))
