"""vkt.nn's layers, re-exported by vkt.nn."""
from .activation import *  # noqa: F401,F403
from .adaptivemaxpool import AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d  # noqa: F401
from .alphadropout import AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .fractionalmaxpool import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .loss import *  # noqa: F401,F403
from .module import Module  # noqa: F401
from .normalization import LayerNorm, RMSNorm  # noqa: F401
from .padding import *  # noqa: F401,F403
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle, Softmax2d  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d,
    LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .sparse_more import EmbeddingBag  # noqa: F401
from .transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
