"""Node-sample analytics (seed 003): job utilisation, DFS load and hot zones, batch and live."""
