"""Loss modules (nn.MSELoss, nn.CrossEntropyLoss, ...)."""
