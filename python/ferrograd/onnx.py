"""``torch.onnx``: importable; exporting is not supported."""


def export(*args, **kwargs):
    raise NotImplementedError("torch.onnx.export is not supported by ferrograd")
