#!/usr/bin/env bash
# GPU smoke test of the vllm backend, for a machine with an NVIDIA GPU and no model downloads:
#   1. installs sgfs with the vllm extra (vLLM brings torch, transformers and tokenizers);
#   2. builds a tiny local model directory: a byte-level BPE tokenizer trained here on sgfs's own docs and
#      procedural specs, a chat template, and a small Llama config; the weights are random (vLLM's
#      load_format "dummy"), so the text is nonsense but every stage runs: chat templating, batched
#      generation with JSON-schema structured outputs and per-request seeds, validation, repair, fallback;
#   3. builds a pack of 200 seeds and prints specs/min and the shares validated, repaired and fallen back.
# Usage: bash scripts/gpu_smoke.sh [SEEDS] [WORKDIR]   (defaults: 1-200 and a temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS="${1:-1-200}"
WORK="${2:-$(mktemp -d)}"
MODEL="$WORK/tiny-model"
PYTHON="${PYTHON:-python3}"

command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[vllm]'
"$PYTHON" -c 'import vllm; print("vLLM", vllm.__version__)'

# Tokenizer and config, made locally.
"$PYTHON" - "$MODEL" <<'PY'
import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, PreTrainedTokenizerFast

from generators import build_spec
from generators.llm.prompting import prompt_texts

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
corpus = [p.read_text("utf-8") for p in Path("docs").glob("*.md")]
corpus += list(prompt_texts().values())
corpus += [build_spec(seed).to_json() for seed in range(1000, 1400)]
special = ["<|begin|>", "<|end|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>"]
tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=8192, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
)
tokenizer.train_from_iterator(corpus, trainer)
chat_template = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tokenizer, bos_token="<|begin|>", eos_token="<|end|>", pad_token="<|pad|>"
)
fast.chat_template = chat_template
fast.save_pretrained(out)
config = LlamaConfig(
    vocab_size=len(fast),
    hidden_size=256,
    intermediate_size=688,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=32768,
    bos_token_id=fast.bos_token_id,
    eos_token_id=fast.eos_token_id,
    pad_token_id=fast.pad_token_id,
    torch_dtype="bfloat16",
)
config.save_pretrained(out)
print(f"tiny model in {out}: vocabulary {len(fast)}, {json.loads((out / 'config.json').read_text())['model_type']}")
PY

# The pack: random weights, structured outputs, 200 seeds in one batch per round.
"$PYTHON" scripts/bench_specs.py --backend vllm --model "$MODEL" --seeds "$SEEDS" --out "$WORK/smoke.sgfspack" \
    --batch-size 200 --max-tokens 2048 \
    --engine-option load_format=dummy \
    --engine-option max_model_len=32768 \
    --engine-option gpu_memory_utilization=0.6 \
    --engine-option seed=0
"$PYTHON" -m sgfs specs verify "$WORK/smoke.sgfspack"
echo "gpu smoke: pack at $WORK/smoke.sgfspack" >&2
