"""Models from libraries the project's suites do not cover, as a new user would compile them.

`python benchmarks/library_program_runs.py --unseen` runs them as it runs the
other-library suite: compiled under `run_program=True`, sorted (bitwise,
refused with the reason, failed, different values, other), and each file
that was written run as a script. They are here to find what the program
file cannot do yet on code nobody tuned it for, not to be kept passing:
nothing in CI runs them, and their libraries are not in any extra. Install
what you want measured (a builder whose library is missing is left out, and
the harness says so):

    pip install peft monai pyro-ppl gpytorch zuko normflows torchsde neuraloperator \
        tab-transformer-pytorch segmentation-models-pytorch vit-pytorch \
        denoising-diffusion-pytorch torchmetrics

torchvision (which the last five import) must be the build made for the
installed torch (`torch==2.11.0` with `torchvision==0.26.0`): another one
fails to load its operators, and transformers then fails to import too.

The models are small (tiny configs, nothing downloaded) and seeded. A name
with `training` runs with grad on (a backward), the others under `no_grad`.
"""

from __future__ import annotations

import torch
from torch import nn

from fixtures.zoo import Case, seeded

#: each builder's library, by its import name (the harness leaves out a builder whose library is
#: not installed)
LIBRARIES = {
    "peft_lora_llama_training": "peft",
    "monai_unet": "monai",
    "monai_unetr": "monai",
    "monai_segresnet_training": "monai",
    "monai_basic_unet_training": "monai",
    "monai_dice_ce_training": "monai",
    "pyro_bayesian_linear_training": "pyro",
    "gpytorch_exact_gp_training": "gpytorch",
    "torchrl_ppo_loss_training": "torchrl",
    "pyg_gat_training": "torch_geometric",
    "x_transformers_decoder_training": "x_transformers",
    "diffusers_vae_training": "diffusers",
}


def _adapted_llama(adapter) -> Case:
    """peft's `adapter` on a one-layer Llama (vocabulary 64, width 32), a causal-LM loss over 2x8."""
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    generator = seeded()
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
    )  # fmt: skip
    model = get_peft_model(LlamaForCausalLM(config), adapter)
    ids = torch.randint(0, 64, (2, 8), generator=generator)
    return Case(model, (), {"input_ids": ids, "labels": ids})


def peft_lora_llama_training() -> Case:
    """peft: LoRA adapters on a one-layer Llama's q and v projections, a causal-LM loss."""
    from peft import LoraConfig

    return _adapted_llama(LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))


def monai_unet() -> Case:
    """MONAI: a 2-D residual UNet for segmentation, inference."""
    from monai.networks.nets import UNet

    seeded()
    model = UNet(
        spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2),
        num_res_units=1,
    )  # fmt: skip
    return Case(model.eval(), (torch.randn(1, 1, 32, 32),), {})


def monai_unetr() -> Case:
    """MONAI: a 2-D UNETR (a ViT encoder under a convolutional decoder), inference."""
    from monai.networks.nets import UNETR

    seeded()
    model = UNETR(
        in_channels=1, out_channels=2, img_size=(16, 16), feature_size=4, hidden_size=32,
        mlp_dim=64, num_heads=2, spatial_dims=2,
    )  # fmt: skip
    return Case(model.eval(), (torch.randn(1, 1, 16, 16),), {})


def monai_segresnet_training() -> Case:
    """MONAI: SegResNet with group norms, a training step."""
    from monai.networks.nets import SegResNet

    seeded()
    model = SegResNet(
        spatial_dims=2, init_filters=8, in_channels=1, out_channels=2, blocks_down=(1, 1),
        blocks_up=(1,), norm=("GROUP", {"num_groups": 4}),
    )  # fmt: skip
    return Case(model, (torch.randn(1, 1, 16, 16),), {})


def monai_basic_unet_training() -> Case:
    """MONAI: BasicUNet (replication-padded convolutions), a training step."""
    from monai.networks.nets import BasicUNet

    seeded()
    model = BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(4, 4, 8, 8, 16, 4))
    return Case(model, (torch.randn(1, 1, 32, 32),), {})


def monai_dice_ce_training() -> Case:
    """MONAI: the Dice + cross-entropy loss over logits and an integer label map."""
    from monai.losses import DiceCELoss

    generator = seeded()
    logits = torch.randn(2, 3, 16, 16, generator=generator).requires_grad_()
    target = torch.randint(0, 3, (2, 1, 16, 16), generator=generator)
    return Case(DiceCELoss(to_onehot_y=True, softmax=True), (logits, target), {})


class BayesianLinear(nn.Module):
    """A mean-field Gaussian weight (pyro's distributions): a sample's likelihood minus the KL."""

    def __init__(self) -> None:
        super().__init__()
        self.loc = nn.Parameter(torch.randn(8, 4) * 0.1)
        self.log_scale = nn.Parameter(torch.full((8, 4), -2.0))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        import pyro.distributions as dist

        posterior = dist.Normal(self.loc, self.log_scale.exp())
        weight = posterior.rsample()
        prior = dist.Normal(torch.zeros_like(self.loc), torch.ones_like(self.loc))
        kl = torch.distributions.kl_divergence(posterior, prior).sum()
        return kl - dist.Normal(x @ weight, 1.0).log_prob(y).sum()


def pyro_bayesian_linear_training() -> Case:
    """pyro: a Bayesian linear layer's negative ELBO, a training step."""
    generator = seeded()
    inputs = (torch.randn(5, 8, generator=generator), torch.randn(5, 4, generator=generator))
    return Case(BayesianLinear(), inputs, {})


class NegativeMarginalLikelihood(nn.Module):
    """An exact GP's negative marginal log likelihood (gpytorch's training objective)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        import gpytorch

        from benchmarks.data.unseen_gp import ExactGP

        super().__init__()
        likelihood = gpytorch.likelihoods.GaussianLikelihood()
        self.gp = ExactGP(x, y, likelihood)
        self.mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, self.gp)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -self.mll(self.gp(x), y)


def gpytorch_exact_gp_training() -> Case:
    """gpytorch: an RBF-kernel exact GP's loss on 20 points, a training step."""
    generator = seeded()
    x = torch.linspace(0, 1, 20)
    y = torch.sin(x * 6.28) + 0.1 * torch.randn(20, generator=generator)
    return Case(NegativeMarginalLikelihood(x, y), (x, y), {})


def _tanh_normal_actor() -> nn.Module:
    """torchrl's stochastic policy over 4 observations: a Tanh-squashed Normal over 2 actions."""
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.modules import ProbabilisticActor, TanhNormal

    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4), NormalParamExtractor())
    return ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True,
    )  # fmt: skip


def _steps(generator: torch.Generator, **more: object):
    """A TensorDict batch of six steps of 4 observations and 2 actions in (-0.9, 0.9), and `more`."""
    from tensordict import TensorDict

    observation = torch.randn(6, 4, generator=generator)
    action = torch.rand(6, 2, generator=generator) * 1.8 - 0.9
    return TensorDict({"observation": observation, "action": action, **more}, batch_size=[6])


class PPOTotal(nn.Module):
    """torchrl's clipped PPO loss, its three terms summed (what an optimizer steps on)."""

    def __init__(self) -> None:
        from torchrl.modules import ValueOperator
        from torchrl.objectives import ClipPPOLoss

        super().__init__()
        value = ValueOperator(nn.Linear(4, 1), in_keys=["observation"])
        self.loss = ClipPPOLoss(_tanh_normal_actor(), value)

    def forward(self, batch):
        out = self.loss(batch)
        return out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]


def torchrl_ppo_loss_training() -> Case:
    """torchrl: a clipped PPO loss over a TensorDict batch of six steps, a training step."""
    generator = seeded()
    log_prob, advantage, target = (
        torch.randn(*s, generator=generator) for s in ((6,), (6, 1), (6, 1))
    )
    batch = _steps(generator, action_log_prob=log_prob, advantage=advantage, value_target=target)
    return Case(PPOTotal(), (batch,), {})


class GAT(nn.Module):
    """Two graph-attention layers (torch_geometric's GATConv), the first with two heads."""

    def __init__(self) -> None:
        from torch_geometric.nn import GATConv

        super().__init__()
        self.first, self.second = GATConv(8, 8, heads=2), GATConv(16, 4, heads=1)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        return self.second(torch.relu(self.first(x, edges)), edges)


def pyg_gat_training() -> Case:
    """torch_geometric: a two-layer GAT on a random graph of 10 nodes, a training step."""
    generator = seeded()
    x = torch.randn(10, 8, generator=generator)
    return Case(GAT(), (x, torch.randint(0, 10, (2, 30), generator=generator)), {})


def x_transformers_decoder_training() -> Case:
    """x-transformers: a one-layer decoder LM with rotary positions, a training step."""
    from x_transformers import Decoder, TransformerWrapper

    generator = seeded()
    decoder = Decoder(dim=32, depth=1, heads=2, rotary_pos_emb=True)
    model = TransformerWrapper(num_tokens=64, max_seq_len=16, attn_layers=decoder)
    return Case(model, (torch.randint(0, 64, (2, 8), generator=generator),), {})


def diffusers_vae_training() -> Case:
    """diffusers: a one-block AutoencoderKL's reconstruction, a training step."""
    from diffusers import AutoencoderKL

    seeded()
    model = AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",), block_out_channels=(8,), latent_channels=2,
        norm_num_groups=4, layers_per_block=1,
    )  # fmt: skip
    return Case(model, (torch.randn(1, 3, 16, 16),), {})


def monai_dynunet_training() -> Case:
    """MONAI: nnU-Net's DynUNet (instance norms, deep supervision off), a training step."""
    from monai.networks.nets import DynUNet

    seeded()
    model = DynUNet(
        spatial_dims=2, in_channels=1, out_channels=2, kernel_size=(3, 3, 3),
        strides=(1, 2, 2), upsample_kernel_size=(2, 2), filters=(4, 8, 16),
    )  # fmt: skip
    return Case(model, (torch.randn(1, 1, 16, 16),), {})


def monai_attention_unet() -> Case:
    """MONAI: an attention-gated UNet, inference."""
    from monai.networks.nets import AttentionUnet

    seeded()
    model = AttentionUnet(
        spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2)
    )
    return Case(model.eval(), (torch.randn(1, 1, 16, 16),), {})


def monai_densenet_training() -> Case:
    """MONAI: a small DenseNet classifier over 2-D images, a training step."""
    from monai.networks.nets import DenseNet

    seeded()
    model = DenseNet(
        spatial_dims=2, in_channels=1, out_channels=3, init_features=8, growth_rate=4,
        block_config=(2, 2),
    )  # fmt: skip
    return Case(model, (torch.randn(2, 1, 16, 16),), {})


def monai_swin_unetr() -> Case:
    """MONAI: SwinUNETR (shifted-window attention, relative position bias), 2-D, inference."""
    from monai.networks.nets import SwinUNETR

    seeded()
    model = SwinUNETR(
        in_channels=1, out_channels=2, feature_size=12, depths=(1, 1, 1, 1),
        num_heads=(1, 1, 1, 1), spatial_dims=2,
    )  # fmt: skip
    return Case(model.eval(), (torch.randn(1, 1, 64, 64),), {})


def peft_ia3_bert_training() -> Case:
    """peft: IA3 scaling vectors on a one-layer BERT's key, value and output layers."""
    from peft import IA3Config, get_peft_model
    from transformers import BertConfig, BertForSequenceClassification

    generator = seeded()
    config = BertConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=32, num_labels=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    adapter = IA3Config(
        target_modules=["key", "value", "output.dense"], feedforward_modules=["output.dense"]
    )
    model = get_peft_model(BertForSequenceClassification(config), adapter)
    ids = torch.randint(0, 64, (2, 8), generator=generator)
    return Case(model, (), {"input_ids": ids, "labels": torch.tensor([0, 1])})


def peft_dora_llama_training() -> Case:
    """peft: DoRA (weight-decomposed LoRA) on a one-layer Llama's projections, a causal-LM loss."""
    from peft import LoraConfig

    return _adapted_llama(LoraConfig(r=4, target_modules=["q_proj", "o_proj"], use_dora=True))


def torchao_qat_training() -> Case:
    """torchao: quantization-aware training (int8 activations, int4 weights faked), a step."""
    from torchao.quantization import quantize_
    from torchao.quantization.qat import FakeQuantizeConfig, IntXQuantizationAwareTrainingConfig

    seeded()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
    activations = FakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False)
    weights = FakeQuantizeConfig(torch.int4, group_size=32)
    quantize_(model, IntXQuantizationAwareTrainingConfig(activations, weights))
    return Case(model, (torch.randn(4, 64),), {})


class Mixture(nn.Module):
    """A Gaussian mixture's negative log-likelihood (torch.distributions' MixtureSameFamily)."""

    def __init__(self) -> None:
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(3))
        self.loc = nn.Parameter(torch.randn(3, 2))
        self.log_scale = nn.Parameter(torch.zeros(3, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import pyro.distributions as dist

        mix = dist.Categorical(logits=self.logits)
        parts = dist.Independent(dist.Normal(self.loc, self.log_scale.exp()), 1)
        return -dist.MixtureSameFamily(mix, parts).log_prob(x).mean()


def pyro_mixture_training() -> Case:
    """pyro: a three-part Gaussian mixture's negative log-likelihood, a training step."""
    generator = seeded()
    return Case(Mixture(), (torch.randn(16, 2, generator=generator),), {})


class SACTotal(nn.Module):
    """torchrl's SAC loss, its actor, Q-value and temperature terms summed."""

    def __init__(self) -> None:
        from torchrl.modules import MLP, ValueOperator
        from torchrl.objectives import SACLoss

        super().__init__()
        qvalue = ValueOperator(MLP(in_features=6, out_features=1, num_cells=[8]),
                               in_keys=["observation", "action"])  # fmt: skip
        self.loss = SACLoss(_tanh_normal_actor(), qvalue, target_entropy=-2.0)

    def forward(self, batch):
        out = self.loss(batch)
        return out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]


def torchrl_sac_loss_training() -> Case:
    """torchrl: SAC's loss over a TensorDict batch of six transitions, a training step."""
    generator = seeded()
    stop = torch.zeros(6, 1, dtype=torch.bool)
    following = {
        "observation": torch.randn(6, 4, generator=generator),
        "reward": torch.randn(6, 1, generator=generator),
        "done": stop, "terminated": stop.clone(),
    }  # fmt: skip
    return Case(SACTotal(), (_steps(generator, next=following),), {})


def transformers_vit_training() -> Case:
    """transformers: a one-layer ViT image classifier, a training step with labels."""
    from transformers import ViTConfig, ViTForImageClassification

    generator = seeded()
    config = ViTConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, num_labels=3,
    )  # fmt: skip
    pixels = torch.randn(2, 3, 16, 16, generator=generator)
    return Case(
        ViTForImageClassification(config),
        (),
        {"pixel_values": pixels, "labels": torch.tensor([0, 2])},
    )


LIBRARIES.update(
    monai_dynunet_training="monai", monai_attention_unet="monai", monai_densenet_training="monai",
    monai_swin_unetr="monai", peft_ia3_bert_training="peft", peft_dora_llama_training="peft",
    torchao_qat_training="torchao", pyro_mixture_training="pyro",
    torchrl_sac_loss_training="torchrl", transformers_vit_training="transformers",
)  # fmt: skip


class FlowNLL(nn.Module):
    """A normalizing flow's negative log-likelihood: `flow(context).log_prob(x)`, zuko's API."""

    def __init__(self, flow: nn.Module) -> None:
        super().__init__()
        self.flow = flow

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return -self.flow(context).log_prob(x).mean()


def zuko_nsf_training() -> Case:
    """zuko: a conditional neural spline flow (two rational-quadratic transforms), its NLL."""
    import zuko

    generator = seeded()
    flow = zuko.flows.NSF(features=3, context=2, transforms=2, hidden_features=(16, 16))
    x, context = torch.randn(8, 3, generator=generator), torch.randn(8, 2, generator=generator)
    return Case(FlowNLL(flow), (x, context), {})


class ForwardKLD(nn.Module):
    """normflows' training loss: the forward KL divergence of a flow to samples of the target."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.forward_kld(x)


def normflows_realnvp_training() -> Case:
    """normflows: a RealNVP (four affine couplings and permutations) on 2-d data, its KL loss."""
    import normflows as nf

    generator = seeded()
    flows = []
    for _ in range(4):
        flows += [nf.flows.AffineCouplingBlock(nf.nets.MLP([1, 16, 2], init_zeros=True)),
                  nf.flows.Permute(2, mode="swap")]  # fmt: skip
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows)
    return Case(ForwardKLD(model), (torch.randn(16, 2, generator=generator),), {})


class SDEIntegral(nn.Module):
    """torchsde: an Ito SDE with a learned drift and diffusion, solved by Euler-Maruyama."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self) -> None:
        super().__init__()
        self.drift, self.diffusion = nn.Linear(3, 3), nn.Linear(3, 3)

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.drift(y))

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.diffusion(y))

    def forward(self, y0: torch.Tensor, ts: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        import torchsde

        brownian = _FixedBrownian(ts, noise)
        return torchsde.sdeint(self, y0, ts, bm=brownian, method="euler", dt=0.1)[-1].sum()


class _FixedBrownian:
    """Brownian increments given as a tensor, so that compiled and eager draw the same noise."""

    def __init__(self, ts: torch.Tensor, noise: torch.Tensor) -> None:
        self.ts, self.noise = ts, noise
        self.shape, self.dtype, self.device, self.levy_area_approximation = (
            noise.shape[1:], noise.dtype, noise.device, "none",
        )  # fmt: skip

    def __call__(self, ta, tb=None, return_U=False, return_A=False):
        return self.noise[0] * (tb - ta).sqrt()


def torchsde_euler_training() -> Case:
    """torchsde: `sdeint` with Euler-Maruyama over four steps, a training step through it."""
    generator = seeded()
    ts = torch.linspace(0, 0.4, 5)
    return Case(SDEIntegral(), (torch.randn(4, 3, generator=generator), ts,
                                torch.randn(1, 4, 3, generator=generator)), {})  # fmt: skip


def neuralop_fno_training() -> Case:
    """neuraloperator: a 2-d Fourier neural operator (spectral convolutions through rfft2)."""
    from neuralop.models import FNO

    generator = seeded()
    model = FNO(n_modes=(4, 4), hidden_channels=8, in_channels=1, out_channels=1, n_layers=2)
    return Case(model, (torch.randn(2, 1, 16, 16, generator=generator),), {})


def ft_transformer_training() -> Case:
    """tab-transformer-pytorch: an FT-Transformer over categorical and continuous columns."""
    from tab_transformer_pytorch import FTTransformer

    generator = seeded()
    model = FTTransformer(categories=(3, 4), num_continuous=5, dim=16, depth=1, heads=2,
                          dim_out=1, attn_dropout=0.0, ff_dropout=0.0)  # fmt: skip
    categories = torch.stack([torch.randint(0, 3, (6,), generator=generator),
                              torch.randint(0, 4, (6,), generator=generator)], dim=1)  # fmt: skip
    return Case(model, (categories, torch.randn(6, 5, generator=generator)), {})


def transformers_t5_training() -> Case:
    """transformers: a one-layer T5 encoder-decoder, a seq2seq training step with labels."""
    from transformers import T5Config, T5ForConditionalGeneration

    generator = seeded()
    config = T5Config(
        vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1,
        num_heads=4, dropout_rate=0.0, decoder_start_token_id=0,
    )  # fmt: skip
    ids = torch.randint(0, 64, (2, 8), generator=generator)
    labels = torch.randint(0, 64, (2, 6), generator=generator)
    return Case(T5ForConditionalGeneration(config), (), {"input_ids": ids, "labels": labels})


def transformers_whisper_training() -> Case:
    """transformers: a one-layer Whisper on 8 mel bins, a speech-to-text training step."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    generator = seeded()
    config = WhisperConfig(
        vocab_size=64, num_mel_bins=8, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=16,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    )  # fmt: skip
    features = torch.randn(2, 8, 32, generator=generator)
    labels = torch.randint(3, 64, (2, 6), generator=generator)
    model = WhisperForConditionalGeneration(config)
    return Case(model, (), {"input_features": features, "labels": labels})


def transformers_mamba_training() -> Case:
    """transformers: a one-layer Mamba (its sequential-scan path on CPU), a causal-LM loss."""
    from transformers import MambaConfig, MambaForCausalLM

    generator = seeded()
    config = MambaConfig(vocab_size=64, hidden_size=32, state_size=4, num_hidden_layers=1,
                         expand=2, conv_kernel=4)  # fmt: skip
    ids = torch.randint(0, 64, (2, 8), generator=generator)
    return Case(MambaForCausalLM(config), (), {"input_ids": ids, "labels": ids})


def torchvision_mobilenet_training() -> Case:
    """torchvision: MobileNetV3-small (hard-swish, squeeze-excitation) on 64x64, a step."""
    from torchvision.models import mobilenet_v3_small

    generator = seeded()
    model = mobilenet_v3_small(num_classes=4, dropout=0.0)
    return Case(model, (torch.randn(2, 3, 64, 64, generator=generator),), {})


def smp_unet_training() -> Case:
    """segmentation-models-pytorch: a U-Net on a ResNet-18 encoder (no weights), a step."""
    import segmentation_models_pytorch as smp

    generator = seeded()
    model = smp.Unet("resnet18", encoder_weights=None, classes=2, encoder_depth=3,
                     decoder_channels=(32, 16, 8))  # fmt: skip
    return Case(model, (torch.randn(2, 3, 32, 32, generator=generator),), {})


def vit_pytorch_simple_vit_training() -> Case:
    """vit-pytorch: lucidrains' SimpleViT (2-d sincos positions, einops), a step."""
    from vit_pytorch import SimpleViT

    generator = seeded()
    model = SimpleViT(image_size=16, patch_size=4, num_classes=3, dim=32, depth=1, heads=2,
                      mlp_dim=64)  # fmt: skip
    return Case(model, (torch.randn(2, 3, 16, 16, generator=generator),), {})


class DiffusionLoss(nn.Module):
    """denoising-diffusion-pytorch's training loss at given timesteps and noise."""

    def __init__(self) -> None:
        from denoising_diffusion_pytorch import GaussianDiffusion, Unet

        super().__init__()
        unet = Unet(dim=8, dim_mults=(1, 2), flash_attn=False)
        self.diffusion = GaussianDiffusion(unet, image_size=16, timesteps=10)

    def forward(self, images: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return self.diffusion.p_losses(images, t, noise=noise)


def ddpm_unet_training() -> Case:
    """denoising-diffusion-pytorch: a DDPM's U-Net loss at fixed timesteps and noise, a step."""
    generator = seeded()
    images = torch.rand(2, 3, 16, 16, generator=generator)
    t = torch.tensor([1, 7])
    return Case(DiffusionLoss(), (images, t, torch.randn(2, 3, 16, 16, generator=generator)), {})


class SSIM(nn.Module):
    """torchmetrics' functional structural similarity, as a model a user compiles."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        from torchmetrics.functional.image import structural_similarity_index_measure

        return structural_similarity_index_measure(x, y, data_range=1.0)


def torchmetrics_ssim() -> Case:
    """torchmetrics: the structural similarity of two image batches (a Gaussian window)."""
    generator = seeded()
    a = torch.rand(2, 3, 32, 32, generator=generator)
    b = (a + 0.1 * torch.randn(2, 3, 32, 32, generator=generator)).clamp(0, 1)
    return Case(SSIM(), (a, b), {})


LIBRARIES.update(
    zuko_nsf_training="zuko", normflows_realnvp_training="normflows",
    torchsde_euler_training="torchsde", neuralop_fno_training="neuralop",
    ft_transformer_training="tab_transformer_pytorch", transformers_t5_training="transformers",
    transformers_whisper_training="transformers", transformers_mamba_training="transformers",
    torchvision_mobilenet_training="torchvision", smp_unet_training="segmentation_models_pytorch",
    vit_pytorch_simple_vit_training="vit_pytorch", ddpm_unet_training="denoising_diffusion_pytorch",
    torchmetrics_ssim="torchmetrics",
)  # fmt: skip
