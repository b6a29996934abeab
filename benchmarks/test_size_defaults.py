"""Three small models under the default artifacts, for `snapshot_size.py --suite`.

A tiny CNN (conv, batch norm, ReLU) trained, an MLP trained and a transformer
block in inference, each with `@pytest.mark.compile_snapshot` and no
`artifacts=`: what a new user's first tests store. (The zoo's own tests name
every artifact, so its committed sets exercise the opt-in ones too.)
Not part of the suite: `benchmarks/` is not in `testpaths`.
"""

import pytest
import torch

from fixtures import zoo


@pytest.mark.compile_snapshot
def test_tiny_cnn_training(compile_model):
    model, args, _ = zoo.convbn_inference()
    compile_model(model.train(), *args)


@pytest.mark.compile_snapshot
def test_mlp_training(compile_model):
    model, args, _ = zoo.mlp_training()
    compile_model(model, *args)


@pytest.mark.compile_snapshot
def test_transformer_block(compile_model):
    model, args, _ = zoo.transformer_block()
    with torch.no_grad():
        compile_model(model, *args)
