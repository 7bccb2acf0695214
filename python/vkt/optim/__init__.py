"""vkt.optim: torch.optim's optimizers, learning-rate schedulers and weight averaging (swa_utils). SGD, Adam, AdamW,
RMSprop and Adagrad update each parameter with one fused kernel on its device; Adamax, NAdam, RAdam, Adadelta, Rprop,
ASGD, Adafactor and LBFGS step as several vkt ops per parameter (torch's single-tensor code)."""
from . import lr_scheduler, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "Rprop", "SGD", "lr_scheduler", "swa_utils"]
