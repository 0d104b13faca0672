"""Refusals by name: a name outside the subset raises `Unsupported` (a NotImplementedError
and an AttributeError, so `hasattr` stays False), naming what is refused and what exists."""

from __future__ import annotations


class Unsupported(NotImplementedError, AttributeError):
    """gpulab.torch does not implement this (the message names it and the supported set)."""


# what each namespace offers, for the message (kept short: the docs/torch.md page is complete)
SUPPORTED = {
    "torch": "tensor zeros ones full arange randn rand randint manual_seed Generator "
    "zeros_like ones_like full_like exp log sqrt abs relu sigmoid tanh neg clamp "
    "maximum minimum softmax log_softmax sum mean max min argmax argmin matmul mm bmm "
    "where masked_fill cat stack narrow select split chunk flip index_select gather "
    "transpose permute reshape flatten unsqueeze squeeze no_grad float32 int64 "
    "int32 bool nn optim compile",
    "tensor": "arithmetic with broadcasting, @, ** (integer powers), relu gelu sigmoid tanh "
    "exp log neg sqrt rsqrt abs clamp maximum minimum softmax log_softmax sum mean "
    "max min amax amin argmax argmin any all var std norm transpose permute reshape view flatten "
    "unsqueeze squeeze expand t T comparisons masked_fill basic indexing narrow "
    "select split chunk flip index_select gather item tolist numpy shape size dim "
    "dtype requires_grad grad detach zero_ backward to float long int bool clone",
    "nn": "Module Linear Sequential ModuleList ReLU GELU Sigmoid Tanh Dropout Embedding "
    "LayerNorm Identity Softmax LogSoftmax Flatten CrossEntropyLoss MSELoss Parameter "
    "NLLLoss Conv2d MaxPool2d AvgPool2d AdaptiveAvgPool2d Upsample functional init "
    "utils.clip_grad_norm_ utils.clip_grad_value_",
    "nn.functional": "linear relu gelu sigmoid tanh softmax log_softmax dropout embedding "
    "layer_norm cross_entropy mse_loss nll_loss scaled_dot_product_attention conv2d "
    "max_pool2d avg_pool2d adaptive_avg_pool2d interpolate",
    "optim": "SGD (lr, momentum, dampening, nesterov, weight_decay, maximize, parameter "
    "groups), Adam, AdamW; lr_scheduler: LambdaLR StepLR MultiStepLR ExponentialLR "
    "CosineAnnealingLR",
}


def refuse(name: str, where: str = "torch") -> Unsupported:
    """The error for `name` (e.g. "torch.fft", "Tensor.cumsum", "amsgrad=True")."""
    return Unsupported(
        f"gpulab.torch does not implement {name}; supported: {SUPPORTED[where]} (docs/torch.md)"
    )
