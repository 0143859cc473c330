"""Loss functions of ``ferrograd.nn.functional``."""
