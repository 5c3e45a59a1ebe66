"""Write the lab's tiny random-weight Llama: a model directory the real vLLM serves.

Run by `tests.lab.real.vllm.model_dir()` with the vLLM venv's python (it needs
`tokenizers`, `transformers` and `torch`, which that venv has and fleet's does not):

    python make_tiny_llama.py OUT_DIR

Two layers, hidden 128, four attention heads over two KV heads (so one token of KV cache
is 2 layers x 2 x 2 heads x 32 x 2 bytes = 512 bytes in bfloat16), a 2,048-token context,
a byte-level BPE tokenizer trained here on a fixed text with the `tokenizers` package and
a ChatML chat template. Weights are random from a fixed seed: the same bytes every run,
so the directory can be cached by the digest of this file (no weights are downloaded,
and none are needed: random weights give real engine behaviour, if not sense).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SEED = 20260
VOCAB_SIZE = 512
CONTEXT = 2048
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TEXT = (
    "the fleet serves models on hosts behind a gateway and every seat runs an engine "
    "that reads its weights allocates a cache of keys and values and answers requests "
    "one token at a time while the reconciler compares what is declared with what runs "
    "and plans the smallest change that brings them together"
)


def corpus() -> list[str]:
    """A fixed training text: the words in many fixed orders, with digits and punctuation."""
    words_in_order = TEXT.split()
    lines = []
    for i in range(400):
        shift = (i * 7) % len(words_in_order)
        words = words_in_order[shift:] + words_in_order[:shift]
        lines.append(f"{' '.join(words[: 8 + i % 13])}, {i}. Hello! What is {i % 10} + 1?")
    return lines


def train_tokenizer(out: Path) -> None:
    """A byte-level BPE tokenizer with the ChatML specials, saved as a fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        model_max_length=CONTEXT,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))


def write_model(out: Path, vocab_size: int, eos: int, pad: int) -> None:
    """Random Llama weights from a fixed seed, saved as safetensors in bfloat16."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=CONTEXT,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)


def main(argv: list[str]) -> int:
    """Write the model into the directory named on the command line."""
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(out)
    vocab = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    added = json.loads((out / "tokenizer.json").read_text())["added_tokens"]
    size = max([*vocab.values(), *(token["id"] for token in added)]) + 1
    ids = {token["content"]: token["id"] for token in added}
    write_model(out, size, ids["<|im_end|>"], ids["<|endoftext|>"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
