"""``torch.backends``: the CUDA/cuDNN/MPS switches scripts set before training. ferrograd runs on
the CPU, so they are plain settable attributes with PyTorch's defaults and change nothing."""

import types

cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False,
                                                          allow_fp16_reduced_precision_reduction=True,
                                                          allow_bf16_reduced_precision_reduction=True),
                             is_built=lambda: False)
cudnn = types.SimpleNamespace(allow_tf32=True, benchmark=False, deterministic=False, enabled=True,
                              is_available=lambda: False)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
