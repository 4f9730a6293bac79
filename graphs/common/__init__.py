"""What the graphs share: the model seam, the offline model, the base context, history and message helpers,
dual sync/async nodes, tracing names and the visible-text filter. The server layer lives in `server/`."""
