"""AlphaDropout and FeatureAlphaDropout: dropout that keeps SELU activations' mean and variance, active in
training mode only."""
from .. import functional as F
from .dropout import _DropoutNd

__all__ = ["AlphaDropout", "FeatureAlphaDropout"]


class AlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)  # inplace is held but not used, as in torch


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
