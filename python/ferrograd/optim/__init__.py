"""``ferrograd.optim``: optimizers whose per-step arithmetic runs in Rust, and lr schedulers."""
