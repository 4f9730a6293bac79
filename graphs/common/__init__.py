"""What the graphs share: the model seam, the offline model, the base context."""
