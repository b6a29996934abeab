"""Re-record the 12-model upgrade sets: tiny HuggingFace models under two torch versions.

    python tests/data/upgrade_models/record.py VENV_PYTHON [VENV_PYTHON ...]

For each interpreter given (a venv with torch, transformers and this
project's dependencies, e.g. `~/.cache/pytest-torchcompile/venv-torch-2.13/bin/python`),
this writes `MODELS_TEST` into a fresh folder, runs it with the plugin
(`--update-snapshots`, Inductor, this checkout on PYTHONPATH) and packs the
snapshot set as `snapshots-<torch major.minor>.tar.xz` beside this script.
`tests/snapshot/compare/test_upgrade_ranking.py` reads those archives.
Nothing is downloaded: every model is built from a tiny config.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

#: the recorded suite: 12 architectures the project's own suite does not use.
MODELS_TEST = """
import pytest
import torch
import transformers as tf

VOCAB = 64
TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=4, max_position_embeddings=64)


def ids(batch=2, length=8, seed=0):
    return torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def run(compile_model, build, *args, **kwargs):
    torch.manual_seed(0)
    model = build().eval()
    with torch.no_grad():
        return compile_model(model, *args, **kwargs)


snap = pytest.mark.compile_snapshot(backend="inductor")


@snap
def test_gpt2(compile_model):
    config = tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=4, n_positions=64)
    run(compile_model, lambda: tf.GPT2LMHeadModel(config), input_ids=ids())


@snap
def test_llama(compile_model):
    config = tf.LlamaConfig(**TINY, num_key_value_heads=2)
    run(compile_model, lambda: tf.LlamaForCausalLM(config), input_ids=ids())


@snap
def test_mistral(compile_model):
    config = tf.MistralConfig(**TINY, num_key_value_heads=2, sliding_window=4)
    run(compile_model, lambda: tf.MistralForCausalLM(config), input_ids=ids())


@snap
def test_falcon(compile_model):
    config = tf.FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=4, new_decoder_architecture=False)
    run(compile_model, lambda: tf.FalconForCausalLM(config), input_ids=ids())


@snap
def test_bloom(compile_model):
    config = tf.BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=1, n_head=4)
    run(compile_model, lambda: tf.BloomForCausalLM(config), input_ids=ids())


@snap
def test_gptj(compile_model):
    config = tf.GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=4, n_positions=64,
                           rotary_dim=4)
    run(compile_model, lambda: tf.GPTJForCausalLM(config), input_ids=ids())


@snap
def test_gemma(compile_model):
    config = tf.GemmaConfig(**TINY, num_key_value_heads=2, head_dim=8)
    run(compile_model, lambda: tf.GemmaForCausalLM(config), input_ids=ids())


@snap
def test_stablelm(compile_model):
    config = tf.StableLmConfig(**TINY, num_key_value_heads=2)
    run(compile_model, lambda: tf.StableLmForCausalLM(config), input_ids=ids())


@snap
def test_bert(compile_model):
    config = tf.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1,
                           num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    run(compile_model, lambda: tf.BertForSequenceClassification(config), input_ids=ids())


@snap
def test_distilbert(compile_model):
    config = tf.DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=1, n_heads=4, hidden_dim=64,
                                 max_position_embeddings=64)
    run(compile_model, lambda: tf.DistilBertForMaskedLM(config), input_ids=ids())


@snap
def test_t5(compile_model):
    config = tf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=1,
                         num_decoder_layers=1, num_heads=4, decoder_start_token_id=0)
    run(compile_model, lambda: tf.T5ForConditionalGeneration(config), input_ids=ids(),
        decoder_input_ids=ids(2, 6, seed=1))


@snap
def test_vit(compile_model):
    config = tf.ViTConfig(image_size=16, patch_size=8, num_channels=3, hidden_size=32,
                          num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                          num_labels=4)
    torch.manual_seed(0)
    run(compile_model, lambda: tf.ViTForImageClassification(config), torch.randn(1, 3, 16, 16))
"""

INI = "[pytest]\ntorchcompile_snapshot_dir = snapshots\n"


def record(python: str) -> Path:
    """Run the suite under `python`; return the archive written."""
    version = subprocess.run(
        [python, "-c", "import torch; print('.'.join(torch.__version__.split('.')[:2]))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "test_models.py").write_text(MODELS_TEST)
        (work / "pytest.ini").write_text(INI)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--update-snapshots"]
        if not _has_entry_point(python):  # a venv with torch only: load the plugin from PYTHONPATH
            command += ["-p", "pytest_torchcompile.plugin"]
        subprocess.run(command, cwd=work, env=env, check=True)
        archive = HERE / f"snapshots-{version}.tar.xz"
        with tarfile.open(archive, "w:xz") as tar:
            for path in sorted((work / "snapshots").rglob("*")):
                info = tar.gettarinfo(path, path.relative_to(work).as_posix())
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with open(path, "rb") if path.is_file() else open(os.devnull, "rb") as handle:
                    tar.addfile(info, handle if path.is_file() else None)
    return archive


def _has_entry_point(python: str) -> bool:
    probe = "import importlib.metadata as m; print(any(e.name == 'torchcompile' for e in m.entry_points(group='pytest11')))"
    found = subprocess.run([python, "-c", probe], check=True, capture_output=True, text=True)
    return found.stdout.strip() == "True"


def main(pythons: list[str]) -> int:
    if not pythons:
        print(__doc__, file=sys.stderr)
        return 2
    for python in pythons:
        print(f"recorded {record(python)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
