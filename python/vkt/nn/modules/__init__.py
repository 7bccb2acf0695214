"""vkt.nn's layers, re-exported by vkt.nn."""
from .activation import *  # noqa: F401,F403
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .loss import *  # noqa: F401,F403
from .module import Module  # noqa: F401
from .normalization import LayerNorm, RMSNorm  # noqa: F401
from .sparse import Embedding  # noqa: F401
