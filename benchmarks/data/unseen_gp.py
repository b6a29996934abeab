"""gpytorch's exact GP for `unseen_library_models.gpytorch_exact_gp_training`, in a module of its own:
it imports gpytorch when it is imported (a model class must be defined at a module's top level for
the fresh process to unpickle it), which only that builder does."""

from __future__ import annotations

import gpytorch
import torch


class ExactGP(gpytorch.models.ExactGP):
    """An exact GP with a constant mean and a scaled RBF kernel."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, likelihood) -> None:
        super().__init__(x, y, likelihood)
        self.mean = gpytorch.means.ConstantMean()
        self.cov = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, inputs: torch.Tensor):
        return gpytorch.distributions.MultivariateNormal(self.mean(inputs), self.cov(inputs))
